--[[ rfq publish: write one chunk of messages atomically, insert-if-absent.

Input:
  KEYS[1]        rfq:<topic>:backlog
  KEYS[2..n+1]   rfq:<topic>:message:<id> for each message, in input order
  ARGV[1]        '1' to publish at the front (consumed next), '0' for the back (FIFO)
  ARGV[2..]      per message, in the order of KEYS[2..]: <id>, <nfields>, f1, v1, ..., f<nfields>, v<nfields>

Output: the number of messages written. A message whose hash already exists is skipped: it was
written by an earlier attempt whose reply was lost, so a retry never duplicates.

Order: the backlog is consumed from its tail. Back: LPUSH in input order. Front: RPUSH in reverse
input order, so the chunk is consumed next and still in input order.
]]
local ids = {}
local a = 2
for i = 2, #KEYS do
  local id = ARGV[a]
  local nfields = tonumber(ARGV[a + 1])
  if redis.call('EXISTS', KEYS[i]) == 0 then
    call_in_slices('HSET', KEYS[i], ARGV, a + 2, a + 1 + 2 * nfields)
    ids[#ids + 1] = id
  end
  a = a + 2 + 2 * nfields
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
