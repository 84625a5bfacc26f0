--[[ rsmq delete: delete messages by id (RSMQ deleteMessage, for one id or a chunk of a batch).

Input:
  KEYS[1]  {ns}:{q} (ZSET)
  KEYS[2]  {ns}:{q}:Q (HASH)
  ARGV     ids

Output: the ids deleted, in input order. Per id, as RSMQ: ZREM the id, HDEL <id> <id>:rc <id>:fr; it
counts as deleted when ZREM removed it and HDEL removed at least one field (so a message that was never
received counts too; an id given twice counts once). The queue's existence is not checked (RSMQ does not
either).

In bulk, not per id: which ids are members comes from one ZADD NX of them all at score -inf, which adds
exactly those that are not (the usual call adds none and writes nothing); only when it added some does a
ZRANGEBYSCORE of -inf list them (no member had that score: checked first with ZCOUNT, else ZMSCORE tells
the members, which costs more: it formats every score). HMGET their <id>:rc (a received message has one);
only a member without one is looked at further (HEXISTS of <id>, then <id>:fr). Then one ZREM (which also
takes the ids ZADD NX added) and one HDEL for all (in slices). With persistence on, two commands per call
are written to the AOF (three when ZADD NX added some), not two per message.
]]
-- Redis refuses a script at maxmemory (noeviction) only at its first write, and only when that write may
-- grow memory: start with one that cannot, so deleting still works on a full server.
redis.call('ZREM', KEYS[1], '')
local n = #ARGV
local fields, rc_fields, at_floor = {}, {}, {}
for i = 1, n do
  local id = ARGV[i]
  local rc = id .. ':rc'
  fields[3 * i - 2], fields[3 * i - 1], fields[3 * i] = id, rc, id .. ':fr'
  rc_fields[i] = rc
  at_floor[2 * i - 1], at_floor[2 * i] = '-inf', id
end
local absent = {} -- the ids that are not members
if redis.call('ZCOUNT', KEYS[1], '-inf', '-inf') == 0 then
  local added = 0
  for i = 1, 2 * n, 1000 do
    added = added + redis.call('ZADD', KEYS[1], 'NX', unpack(at_floor, i, math.min(i + 999, 2 * n)))
  end
  if added > 0 then
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '-inf')) do
      absent[id] = true
    end
  end
else
  for i = 1, n, 999 do
    local last = math.min(i + 998, n)
    local s = redis.call('ZMSCORE', KEYS[1], unpack(ARGV, i, last))
    for j = 1, last - i + 1 do
      if not s[j] then
        absent[ARGV[i + j - 1]] = true
      end
    end
  end
end
local rcs = hmget_all(KEYS[2], rc_fields)
local out, seen = {}, {}
for i = 1, n do
  local id = ARGV[i]
  if not absent[id] and not seen[id] then
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
