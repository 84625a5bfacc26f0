--[[ rsmq delete: delete messages by id (RSMQ deleteMessage, for one id or a chunk of a batch).

Input:
  KEYS[1]  {ns}:{q} (ZSET)
  KEYS[2]  {ns}:{q}:Q (HASH)
  ARGV     ids

Output: the ids deleted, in input order. Per id, as RSMQ: ZREM the id, HDEL <id> <id>:rc <id>:fr; it
counts as deleted when ZREM removed it and HDEL removed at least one field (so a message that was never
received counts too; an id given twice counts once). The queue's existence is not checked (RSMQ does not
either).

In bulk, not per id: ZMSCORE tells the members and HMGET their <id>:rc (a received message has one);
only a member without one is looked at further (HEXISTS of <id>, then <id>:fr). Then one ZREM and one
HDEL for all (in slices). With persistence on, two commands per call are written to the AOF, not two per
message.
]]
local n = #ARGV
local fields, rc_fields = {}, {}
for i = 1, n do
  local id = ARGV[i]
  local rc = id .. ':rc'
  fields[3 * i - 2], fields[3 * i - 1], fields[3 * i] = id, rc, id .. ':fr'
  rc_fields[i] = rc
end
local scores, rcs = {}, {}
for i = 1, n, 999 do
  local last = math.min(i + 998, n)
  local s = redis.call('ZMSCORE', KEYS[1], unpack(ARGV, i, last))
  local r = redis.call('HMGET', KEYS[2], unpack(rc_fields, i, last))
  for j = 1, last - i + 1 do
    scores[i + j - 1], rcs[i + j - 1] = s[j], r[j]
  end
end
local out, seen = {}, {}
for i = 1, n do
  local id = ARGV[i]
  if scores[i] and not seen[id] then
    seen[id] = true
    if
      rcs[i]
      or redis.call('HEXISTS', KEYS[2], id) == 1
      or redis.call('HEXISTS', KEYS[2], fields[3 * i]) == 1
    then
      out[#out + 1] = id
    end
  end
end
call_in_slices('ZREM', KEYS[1], ARGV, 1, n)
call_in_slices('HDEL', KEYS[2], fields, 1, #fields)
return out
