--[[ streams ack: acknowledge entries in a consumer group (XACK, reporting which ids it took).

Input:
  KEYS[1]  ferroq:stream:{name} (STREAM)
  ARGV[1]  the group
  ARGV[2..] entry ids

Output: {id, ...} the ids that were pending in the group and are acknowledged now, in input order (an id
given twice is reported once). A missing stream or group acknowledges nothing.
]]
local acked = {}
for i = 2, #ARGV do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
    acked[#acked + 1] = ARGV[i]
  end
end
return acked
