--[[ rfq publish: write one chunk of messages atomically, insert-if-absent, at most once per chunk token.

Sent by publish_arrow with an id_column (ids chosen by the caller may name messages that already exist, and
skipping those takes an EXISTS per message decided inside Redis), and for a publish call of one message (one
round trip, where the watched transaction takes two, before the DEL of the record). Every other publish chunk
is a watched transaction without Lua (docs/protocol.md, "publish and publish_batch").

Input:
  KEYS[1]        rfq:<topic>:backlog
  KEYS[2]        rfq:<topic>:published:<token> (STRING: how many of the chunk's messages calls with this token handled)
  KEYS[3..n+2]   rfq:<topic>:message:<id> for each message, in input order
  ARGV[1]        '1' to publish at the front (consumed next), '0' for the back (FIFO)
  ARGV[2]        how long the token's record is kept, in ms; '' for no record (KEYS[2] is then not touched:
                 no dedup key, and insert-if-absent already makes a repeated chunk harmless)
  ARGV[3..]      per message, in the order of KEYS[3..]: <id>, <nfields>, f1, v1, ..., f<nfields>, v<nfields>

Output: the number of messages written. The record (when ARGV[2] is not '') holds how many of the chunk's
messages earlier calls with this token handled, k: those are skipped (a retry after a lost reply, or an
idempotent publish repeated with the same dedup key; k may be less than the chunk's size when the earlier
call had fewer rows, as for the last chunk of a shorter data set). The others are written insert-if-absent (a
message whose hash already exists is skipped), and the record becomes the chunk's size.

Order: the backlog is consumed from its tail. Back: LPUSH in input order. Front: RPUSH in reverse
input order, so the chunk is consumed next and still in input order.
]]
local record = ARGV[2] ~= ''
local done = 0
if record then
  done = tonumber(redis.call('GET', KEYS[2]) or '0')
end
local ids = {}
local a = 3
for i = 3, #KEYS do
  local id = ARGV[a]
  local nfields = tonumber(ARGV[a + 1])
  if i - 2 > done and redis.call('EXISTS', KEYS[i]) == 0 then
    call_in_slices('HSET', KEYS[i], ARGV, a + 2, a + 1 + 2 * nfields)
    ids[#ids + 1] = id
  end
  a = a + 2 + 2 * nfields
end
if record and #KEYS - 2 > done then
  redis.call('SET', KEYS[2], #KEYS - 2, 'PX', ARGV[2])
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
