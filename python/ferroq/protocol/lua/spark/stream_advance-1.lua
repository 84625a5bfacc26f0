--[[ spark stream_advance: where a micro-batch of at most COUNT entries after an offset ends.

Input:
  KEYS[1]  ferroq:stream:<name> (STREAM)
  ARGV[1]  the offset: the id of the last entry of the previous batch ('0-0' before the first entry)
  ARGV[2]  count: the most entries the batch may take (the caller pages: at most 10000 per call)
  ARGV[3]  the last id the batch may take ('+' for no bound: Trigger.AvailableNow sets one)

Output: { last_id, n }: the id of the last of the n entries after the offset ('' and 0 if none). Only
the id travels back: the entries are read by the executors, not by the planner.
]]
local entries = redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], ARGV[3], 'COUNT', ARGV[2])
if #entries == 0 then
  return { '', 0 }
end
return { entries[#entries][1], #entries }
