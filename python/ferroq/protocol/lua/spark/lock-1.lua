--[[ spark lock: one live streaming query per consumer.

Input:
  KEYS[1]  <queue prefix>:spark:lock:<consumer> (STRING: '<instance>\n<start>\n<end>', the query instance
           holding it and the offsets of the batch it planned last)
  ARGV[1]  this query instance's token
  ARGV[2]  how long the lock lasts without renewal, in ms; '0' releases it (if this instance holds it)
  ARGV[3]  the offset this instance plans from now (a batch's start)
  ARGV[4]  the offset it planned up to (the batch's end; ARGV[3] before it knows)

Output: '' when this instance holds the lock now (taken, renewed or released), else the holder's token.

Another instance may take the lock over when it plans from the offset the holder planned from or up
to: it is the same query restarted from its checkpoint (Spark does not always stop the old run's source
before the new run polls). A second query from another checkpoint starts elsewhere and is refused until
the holder's lock expires.
]]
local holder = redis.call('GET', KEYS[1])
local instance
if holder then
  local start, stop
  instance, start, stop = string.match(holder, '^([^\n]*)\n([^\n]*)\n([^\n]*)$')
  if instance ~= ARGV[1] and ARGV[3] ~= start and ARGV[3] ~= stop then
    return instance or holder
  end
end
if ARGV[2] == '0' then
  if instance == ARGV[1] then
    redis.call('DEL', KEYS[1])
  end
  return ''
end
redis.call('SET', KEYS[1], ARGV[1] .. '\n' .. ARGV[3] .. '\n' .. ARGV[4], 'PX', ARGV[2])
return ''
