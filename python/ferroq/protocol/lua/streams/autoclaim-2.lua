--[[ streams autoclaim: take over entries a group's consumers left pending for too long (a crashed or
stuck consumer), dead-lettering those already delivered max_deliveries times.

Input:
  KEYS[1]  ferroq:stream:{name} (STREAM)
  KEYS[2]  ferroq:stream:{dead} (STREAM, the dead-letter stream)
  ARGV[1]  {name}, recorded in dead-lettered entries
  ARGV[2]  the group
  ARGV[3]  the consumer that takes the entries over
  ARGV[4]  min idle time in ms: only entries pending at least this long are taken
  ARGV[5]  the most entries to look at (1..10000), oldest id first
  ARGV[6]  max deliveries: an idle entry delivered this many times already is dead-lettered instead
           of delivered again (0: never)
  ARGV[7]  the error text recorded in dead-lettered entries

Output: {{{id, {field, value, ...}, deliveries}, ...}, {dead-lettered id, ...}}. deliveries counts this
delivery. Entries deleted from the stream while pending are acknowledged and returned in neither list.
A missing group is an error (NOGROUP).
]]
local pending = redis.call('XPENDING', KEYS[1], ARGV[2], 'IDLE', ARGV[4], '-', '+', ARGV[5])
local most = tonumber(ARGV[6])
local take, deliveries, dead = {}, {}, {}
for _, p in ipairs(pending) do
  local id, n = p[1], tonumber(p[4])
  if most > 0 and n >= most then
    if stream_dead_letter(KEYS[1], KEYS[2], ARGV[1], ARGV[2], id, n, ARGV[7]) then
      dead[#dead + 1] = id
    end
  else
    take[#take + 1] = id
    deliveries[id] = n + 1
  end
end
local entries = {}
for i = 1, #take, 1000 do
  -- XCLAIM with the same min idle time: an entry another consumer took meanwhile stays with it
  local got = redis.call('XCLAIM', KEYS[1], ARGV[2], ARGV[3], ARGV[4], unpack(take, i, math.min(i + 999, #take)))
  for _, e in ipairs(got) do
    -- Redis 6.2 returns nil (false here) for an entry deleted from the stream; 7.x leaves it out
    if e and e[2] then
      entries[#entries + 1] = { e[1], e[2], deliveries[e[1]] }
    elseif e then
      redis.call('XACK', KEYS[1], ARGV[2], e[1])
    end
  end
end
return { entries, dead }
