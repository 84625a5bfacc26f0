--[[ spark sink_commit: record that a streaming sink's micro-batch is published.

Input:
  KEYS[1]  <queue prefix>:spark:sink:<sinkId> (STRING: the last committed batch id)
  ARGV[1]  the batch id Spark commits

Output: the batch id recorded before ('' if none). The record only moves forward: the writers of a
micro-batch replayed after a driver crash find it at or past their batch id and publish nothing.
]]
local before = redis.call('GET', KEYS[1])
if not before or tonumber(before) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
return before or ''
