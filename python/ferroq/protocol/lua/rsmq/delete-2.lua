--[[ rsmq delete: delete messages by id (RSMQ deleteMessage, for one id or a chunk of a batch).

Input:
  KEYS[1]  {ns}:{q} (ZSET)
  KEYS[2]  {ns}:{q}:Q (HASH)
  ARGV     ids

Output: the ids deleted, in input order; or, when every id given was deleted (none given twice), their
number alone (the usual call: the client knows the ids, and a list of them would cost the server a reply
value per id). Per id, as RSMQ: ZREM the id, HDEL <id> <id>:rc <id>:fr; it counts as deleted when ZREM
removed it and HDEL removed at least one field (so a message that was never received counts too; an id
given twice counts once). The queue's existence is not checked (RSMQ does not either).

In bulk, not per id: which ids are members comes from one ZADD NX of them all at score -inf, which adds
exactly those that are not (the usual call adds none and writes nothing); only when it added some does a
ZRANGEBYSCORE of -inf list them (no member had that score: checked first with ZCOUNT, else ZMSCORE tells
the members, which costs more: it formats every score). HMGET their <id>:rc (a received message has one).
Then one ZREM (which also takes the ids ZADD NX added) and one HDEL per field kind for all (in slices). The
usual call stops there: ZADD NX added none and ZREM removed as many as were given (so all are members, none
twice) and each has an <id>:rc. Otherwise each id is looked at (a member without <id>:rc: HEXISTS of <id>,
then <id>:fr, before the HDELs). With persistence on, a call of up to 1000 ids writes four commands to the AOF
(its ZREM and an HDEL per field kind; five when ZADD NX added some), not two per message.
]]
-- Redis refuses a script at maxmemory (noeviction) only at its first write, and only when that write may
-- grow memory: start with one that cannot, so deleting still works on a full server.
redis.call('ZREM', KEYS[1], '')
local n = #ARGV
local rc_fields, fr_fields, at_floor = {}, {}, {}
for i = 1, n do
  local id = ARGV[i]
  rc_fields[i], fr_fields[i] = id .. ':rc', id .. ':fr'
  at_floor[2 * i - 1], at_floor[2 * i] = '-inf', id
end
local absent = {} -- the ids that are not members
local added = -1 -- how many ZADD NX added (-1: not known, ZMSCORE told the members)
if redis.call('ZCOUNT', KEYS[1], '-inf', '-inf') == 0 then
  added = 0
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
local removed = 0
for i = 1, n, 1000 do
  removed = removed + redis.call('ZREM', KEYS[1], unpack(ARGV, i, math.min(i + 999, n)))
end
local all = added == 0 and removed == n -- every id a member, none given twice
if all then
  for i = 1, n do
    if not rcs[i] then
      all = false
      break
    end
  end
end
local out = nil
if not all then
  out = {}
  local seen = {}
  for i = 1, n do
    local id = ARGV[i]
    if not absent[id] and not seen[id] then
      seen[id] = true
      if
        rcs[i]
        or redis.call('HEXISTS', KEYS[2], id) == 1
        or redis.call('HEXISTS', KEYS[2], fr_fields[i]) == 1
      then
        out[#out + 1] = id
      end
    end
  end
end
call_in_slices('HDEL', KEYS[2], ARGV, 1, n)
call_in_slices('HDEL', KEYS[2], rc_fields, 1, n)
call_in_slices('HDEL', KEYS[2], fr_fields, 1, n)
return out or n
