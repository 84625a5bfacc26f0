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

Output: {'ok', {id, ...}}: the new entry ids in input order (server-made, so they keep the stream's order);
or {'done', {id, ...}} when the token's record exists: the chunk was appended by an earlier call (a retry
after a lost reply, or an idempotent publish repeated with the same dedup key), nothing is appended, and the
ids are that call's.
]]
local done = redis.call('GET', KEYS[2])
if done then
  local ids = {}
  for id in string.gmatch(done, '%S+') do
    ids[#ids + 1] = id
  end
  return { 'done', ids }
end
local ids = {}
local i = 5
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  -- n <= 1000, so unpack stays far below Lua's C stack limit
  ids[#ids + 1] = redis.call('XADD', KEYS[1], '*', unpack(ARGV, i + 1, i + 2 * n))
  i = i + 1 + 2 * n
end
if ARGV[2] ~= '' then
  redis.call('XTRIM', KEYS[1], ARGV[2], ARGV[4], ARGV[3])
end
redis.call('SET', KEYS[2], table.concat(ids, ' '), 'PX', ARGV[1])
return { 'ok', ids }
