--[[ rfq publish: write one chunk of messages atomically, insert-if-absent, at most once per chunk token.

Input:
  KEYS[1]        rfq:<topic>:backlog
  KEYS[2]        rfq:<topic>:published:<token> (STRING: how many messages the first call with this token wrote)
  KEYS[3..n+2]   rfq:<topic>:message:<id> for each message, in input order
  ARGV[1]        '1' to publish at the front (consumed next), '0' for the back (FIFO)
  ARGV[2]        how long the token's record is kept, in ms; '' for no record (KEYS[2] is then not touched:
                 a plain publish_batch, whose fresh ids already make a repeated chunk harmless)
  ARGV[3..]      per message, in the order of KEYS[3..]: <id>, <nfields>, f1, v1, ..., f<nfields>, v<nfields>

Output: the number of messages written, or -1 when the token's record exists: the chunk was written by an
earlier call (a retry after a lost reply, or an idempotent publish repeated with the same dedup key), and
nothing is written. Otherwise a message whose hash already exists is skipped (insert-if-absent), and the
record is set to the number written.

Order: the backlog is consumed from its tail. Back: LPUSH in input order. Front: RPUSH in reverse
input order, so the chunk is consumed next and still in input order.
]]
local record = ARGV[2] ~= ''
if record and redis.call('EXISTS', KEYS[2]) == 1 then
  return -1
end
local ids = {}
local a = 3
for i = 3, #KEYS do
  local id = ARGV[a]
  local nfields = tonumber(ARGV[a + 1])
  if redis.call('EXISTS', KEYS[i]) == 0 then
    call_in_slices('HSET', KEYS[i], ARGV, a + 2, a + 1 + 2 * nfields)
    ids[#ids + 1] = id
  end
  a = a + 2 + 2 * nfields
end
if record then
  redis.call('SET', KEYS[2], #ids, 'PX', ARGV[2])
end
if #ids == 0 then
  return 0
end
if ARGV[1] == '1' then
  local reversed = {}
  for i = #ids, 1, -1 do
    reversed[#reversed + 1] = ids[i]
  end
  call_in_slices('RPUSH', KEYS[1], reversed, 1, #reversed)
else
  call_in_slices('LPUSH', KEYS[1], ids, 1, #ids)
end
return #ids
