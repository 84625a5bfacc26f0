--[[ spark commit_claim: commit one whole claim of a streaming topic read's ledger, the case of rfq/commit-6n
that the reader always has, recognised with no string built per call: the ledger entry's ids string is
compared with the claim's record as it is, where commit-6n joins the ids of the message keys to compare.

Input:
  KEYS[1..6]  rfq:<topic>:nextlog, :leases, :deliveries, :claims, :claim_leases, :inflight (as commit-6n)
  KEYS[7..]   rfq:<topic>:message:<id> for each id of ARGV[3], in that order
  ARGV[1]     the length of the message key prefix rfq:<topic>:message: (an id is the rest of its key)
  ARGV[2]     the claim's token
  ARGV[3]     its ids, space-separated, in claim order (the ledger entry's)

Output: how many were committed; -1, having written nothing, unless the claim still holds exactly these ids,
they are the nextlog's tail block (pushed by the claim in one atomic script) and none of them is a redelivery
(a ':d' record): then the caller commits with rfq/commit-6n, which handles every case.

The commit itself is commit-6n's: one LTRIM takes the ids off the nextlog, the claim's record and lease go,
each body is deleted and each id leaves the in-flight set (the SREM counts each distinct id once).
Speed: the ids are cut from the keys (string.sub, as commit-6n does), and checked against ARGV[3] by their
count, total length and ends; a pattern walk of the string (gmatch) costs twice as much per id.
]]
local nextlog, claims, claim_leases, inflight = KEYS[1], KEYS[4], KEYS[5], KEYS[6]
local FIRST_BODY = 7
local id_from, token, given = tonumber(ARGV[1]) + 1, ARGV[2], ARGV[3]
local record = redis.call('HGET', claims, token)
if not record then
  return -1
end
local _, _, held = parse_claim(record)
if held ~= given or redis.call('HEXISTS', claims, token .. ':d') == 1 then
  return -1
end
local ids, n, length = {}, #KEYS - FIRST_BODY + 1, -1
for i = 1, n do
  local id = string.sub(KEYS[FIRST_BODY + i - 1], id_from)
  ids[i] = id
  length = length + #id + 1
end
-- given starts with the first id and ends with the last (whole words: the lengths add up to #given).
local starts = n > 0 and string.sub(given, 1, #ids[1] + 1) == ids[1] .. (n > 1 and ' ' or '')
local ends = n > 0 and string.sub(given, -#ids[n] - 1) == (n > 1 and ' ' or '') .. ids[n]
if not starts or not ends or length ~= #given
    or redis.call('LINDEX', nextlog, -1) ~= ids[1] or redis.call('LINDEX', nextlog, -n) ~= ids[n] then
  return -1
end
redis.call('LTRIM', nextlog, 0, -n - 1)
redis.call('HDEL', claims, token)
redis.call('ZREM', claim_leases, token)
local committed = 0
for i = 1, n, 1000 do
  local last = math.min(i + 999, n)
  redis.call('DEL', unpack(KEYS, FIRST_BODY + i - 1, FIRST_BODY + last - 1))
  committed = committed + redis.call('SREM', inflight, unpack(ids, i, last))
end
return committed
