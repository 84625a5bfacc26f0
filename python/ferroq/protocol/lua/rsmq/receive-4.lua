--[[ rsmq receive / pop: take up to COUNT visible messages (RSMQ receiveMessage / popMessage), oldest first.

Input:
  KEYS[1]  {ns}:{q} (ZSET)
  KEYS[2]  {ns}:{q}:Q (HASH)
  KEYS[3]  {ns}:{dlq} (ZSET) of the dead-letter queue the caller knows of, or KEYS[1] again for none
  KEYS[4]  {ns}:{dlq}:Q (HASH), or KEYS[2] again for none
  ARGV[1]  count >= 1
  ARGV[2]  vt in ms, or '' for the queue's vt (stored in seconds; a fraction is honoured, rounded to ms); unused by pop
  ARGV[3]  '1' pop (delete what is taken), '0' receive (hide it for vt)
  ARGV[4]  the namespace prefix '{ns}:', to check KEYS[3] against the stored dead-letter queue

Output:
  {'ok', now_ms, next_ms, {{id, message, rc, fr}, ...}}
      rc: integer receive count, this receive included; fr: first-receive time, epoch ms, a string.
      next_ms: when nothing was taken, the score of the next hidden message (epoch ms), -1 if none;
      -1 when something was taken.
  {'notfound'}                the queue does not exist
  {'dlq', name}               the queue has a dead-letter queue and KEYS[3..4] are not its keys: call again
                              with them (nothing was written)
  {'dlqmissing', name}        the dead-letter queue does not exist (nothing was written)

Per message, exactly RSMQ's writes: receive: rc = HINCRBY <id>:rc 1; on rc == 1 HSET <id>:fr now_ms;
ZADD score now_ms + vt_ms; pop: ZREM the id and HDEL <id>, <id>:rc, <id>:fr. totalrecv grows by the
number taken. Dead letter (ferroq): when 'ferroq:maxrecv' is set and a visible message has already been
received that many times, it is moved instead of taken: ZREM + HDEL here, ZADD score now_ms in the
dead-letter queue (same id), HSET its body there and HINCRBY totalsent 1 there; it does not count towards
COUNT (and is not announced on the dead-letter queue's realtime channel). A member whose body is missing is removed (ZREM + HDEL of its :rc/:fr), never returned.
At most 1000 messages are moved or removed per call.
]]
local q = redis.call('HMGET', KEYS[2], 'vt', 'delay', 'maxsize', 'ferroq:maxrecv', 'ferroq:dlq')
if not q[1] or not q[2] or not q[3] then
  return { 'notfound' }
end
-- A max_receives without a dead-letter queue (a foreign or half-done write) is ignored.
local maxrecv = q[5] and tonumber(q[4])
if maxrecv then
  if KEYS[3] ~= ARGV[4] .. q[5] or KEYS[4] ~= KEYS[3] .. ':Q' then
    return { 'dlq', q[5] }
  end
  if redis.call('HEXISTS', KEYS[4], 'vt') == 0 then
    return { 'dlqmissing', q[5] }
  end
end
local count = tonumber(ARGV[1])
local pop = ARGV[3] == '1'
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now = string.format('%.0f', now_ms)
local vt_ms = math.floor(tonumber(q[1]) * 1000 + 0.5)
if ARGV[2] ~= '' then
  vt_ms = tonumber(ARGV[2])
end
local out, moved = {}, 0
-- Taken messages keep their place until the end, so each range query skips them with an offset.
while #out < count and moved < 1000 do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', #out, count - #out)
  if #ids == 0 then
    break
  end
  for _, id in ipairs(ids) do
    local f = redis.call('HMGET', KEYS[2], id, id .. ':rc', id .. ':fr')
    if not f[1] or (maxrecv and tonumber(f[2] or '0') >= maxrecv) then
      redis.call('ZREM', KEYS[1], id)
      redis.call('HDEL', KEYS[2], id, id .. ':rc', id .. ':fr')
      if f[1] then
        redis.call('ZADD', KEYS[3], now, id)
        redis.call('HSET', KEYS[4], id, f[1])
        redis.call('HINCRBY', KEYS[4], 'totalsent', 1)
      end
      moved = moved + 1
    else
      local rc = redis.call('HINCRBY', KEYS[2], id .. ':rc', 1)
      local fr = f[3] or now
      if rc == 1 then
        fr = now
      end
      out[#out + 1] = { id, f[1], rc, fr }
    end
  end
end
if #out == 0 then
  local nxt = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  return { 'ok', now_ms, nxt[2] and tonumber(nxt[2]) or -1, out }
end
redis.call('HINCRBY', KEYS[2], 'totalrecv', #out)
local deadline = string.format('%.0f', now_ms + vt_ms)
for _, m in ipairs(out) do
  local id = m[1]
  if pop then
    redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id, id .. ':rc', id .. ':fr')
  else
    redis.call('ZADD', KEYS[1], deadline, id)
    if m[3] == 1 then
      redis.call('HSET', KEYS[2], id .. ':fr', now)
    end
  end
end
return { 'ok', now_ms, -1, out }
