--[[ rsmq delete: delete messages by id (RSMQ deleteMessage, for one id or a chunk of a batch).

Input:
  KEYS[1]  {ns}:{q} (ZSET)
  KEYS[2]  {ns}:{q}:Q (HASH)
  ARGV     ids

Output: the ids deleted, in input order. Per id, as RSMQ: ZREM the id, HDEL <id> <id>:rc <id>:fr; it
counts as deleted when ZREM removed it and HDEL removed at least one field (so a message that was never
received counts too). The queue's existence is not checked (RSMQ does not either).
]]
local out = {}
for i = 1, #ARGV do
  local id = ARGV[i]
  local z = redis.call('ZREM', KEYS[1], id)
  local h = redis.call('HDEL', KEYS[2], id, id .. ':rc', id .. ':fr')
  if z == 1 and h > 0 then
    out[#out + 1] = id
  end
end
return out
