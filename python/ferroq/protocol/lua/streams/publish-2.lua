--[[ streams publish: append messages to a stream, at most once per publish token.

Input:
  KEYS[1]  ferroq:stream:{name} (STREAM)
  KEYS[2]  ferroq:stream:{name}:published:{token} (STRING: the ids this token's call appended)
  ARGV[1]  how long the token's record is kept, in ms: long enough for a client to retry after a
           dropped reply, so the retry returns the first call's ids instead of appending again
  ARGV[2]  retention after the append: '' (none), 'MAXLEN' or 'MINID'
  ARGV[3]  retention threshold: a count for MAXLEN, a stream id for MINID ('' with no retention)
  ARGV[4]  '~' (approximate trimming, whole macro-nodes, cheap) or '=' (exact)
  ARGV[5..] per message: n, its number of fields (1..1000), then its n field/value pairs

Output: {'ok', {id, ...}}: the new entry ids in input order (server-made, so they keep the stream's order),
or {'done', {id, ...}}. The record holds the ids of the messages earlier calls with this token appended, k
of them: those are not appended again (a retry after a lost reply, or an idempotent publish repeated with
the same dedup key). 'done': k covers the whole chunk; nothing is appended and the ids are the recorded
ones. 'ok': the ids appended by this call (all messages, or those after the first k when the earlier call
had fewer), and the record grows by them.
]]
local record = redis.call('GET', KEYS[2])
local skip = 0
if record then
  local recorded = record_ids(record)
  skip = #recorded
  local count, j = 0, 5
  while j <= #ARGV do
    count = count + 1
    j = j + 1 + 2 * tonumber(ARGV[j])
  end
  if skip >= count then
    return { 'done', recorded }
  end
end
local ids = {}
local i, m = 5, 0
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  m = m + 1
  if m > skip then
    -- n <= 1000, so unpack stays far below Lua's C stack limit
    ids[#ids + 1] = redis.call('XADD', KEYS[1], '*', unpack(ARGV, i + 1, i + 2 * n))
  end
  i = i + 1 + 2 * n
end
if ARGV[2] ~= '' then
  redis.call('XTRIM', KEYS[1], ARGV[2], ARGV[4], ARGV[3])
end
extend_record(KEYS[2], record, ids, ARGV[1])
return { 'ok', ids }
