--[[ rfq publish of one message: one script call (one round trip), written at most once per call.

Sent for a publish call of one message (publish, or publish_batch of one). Three Redis calls: the record,
the message hash, its id onto the backlog. The id is new (made by the client for this call), so only an
earlier attempt of the same call can have written it, and the record alone tells: no EXISTS per message and
no count to read, as publish-2n needs for chunks whose ids may name messages that already exist.

Input:
  KEYS[1]   rfq:<topic>:backlog
  KEYS[2]   rfq:<topic>:published:<id> (STRING: the call's record, '1' once the message is written)
  KEYS[3]   rfq:<topic>:message:<id>
  ARGV[1]   '1' to publish at the front (consumed next), '0' for the back (FIFO)
  ARGV[2]   how long the record is kept, in ms
  ARGV[3]   the message's id
  ARGV[4..] its fields: f1, v1, ..., fn, vn

Output: 1 if the message was written now, 0 if an earlier attempt of the call wrote it (the record exists).
]]
if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then
  return 0
end
call_in_slices('HSET', KEYS[3], ARGV, 4, #ARGV)
redis.call(ARGV[1] == '1' and 'RPUSH' or 'LPUSH', KEYS[1], ARGV[3])
return 1
