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
  ARGV[5]  '1': the caller reads the bodies of what it received (HMGET {ns}:{q}:Q ids, right after), so this
           script does not; '0' (or a pop): the reply carries them

Output:
  {'ok', now_ms, next_ms, out, again}
      out: id, body of each message taken, one after the other; with ARGV[5] '1' (receive), its id alone.
      again: k, rc, fr of each message taken that was received before (k: its place among those taken,
      from 1; rc: its receive count, this receive included; fr: its first-receive time, epoch ms, a
      string); every other message taken has rc 1 and fr now_ms.
      next_ms: when nothing was taken, the score of the next hidden message (epoch ms), -1 if none;
      -1 when something was taken.
  {'notfound'}                the queue does not exist
  {'dlq', name}               the queue has a dead-letter queue and KEYS[3..4] are not its keys: call again
                              with them (nothing was written)
  {'dlqmissing', name}        the dead-letter queue does not exist (nothing was written)

Per message, the state RSMQ's writes leave: receive: <id>:rc + 1; on rc == 1 <id>:fr = now_ms; score
now_ms + vt_ms; pop: the id, <id>, <id>:rc, <id>:fr removed. ferroq reads every candidate's <id>:rc (and
<id>, unless the caller reads the bodies) with one HMGET (and <id>:fr only of those received before, with a
second one) and writes them with one ZADD / ZREM, HSET and HDEL per call, not per message. The reply holds
no receive count or time that the caller can tell itself. totalrecv grows by the number taken. A body read
here passes through Lua twice (into a Lua string, back into the reply): a caller that reads the bodies
itself costs the server less, at the price of a round trip. Dead letter (ferroq): when 'ferroq:maxrecv' is
set and a visible message has already been received that many times, it is moved instead of taken: ZREM +
HDEL here, ZADD score now_ms in the dead-letter queue (same id), HSET its body there and HINCRBY totalsent 1
there; it does not count towards COUNT (and is not announced on the dead-letter queue's realtime channel).
A member whose body is missing is removed (ZREM + HDEL of its :rc/:fr), never returned; when the caller
reads the bodies, this script cannot see that: the caller drops such a message and deletes it
(rsmq/delete-2), and it is counted in totalrecv. At most 1000 messages are moved or removed per call.
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
local now_ms = now_ms()
local now = string.format('%.0f', now_ms)
local vt_ms = math.floor(tonumber(q[1]) * 1000 + 0.5)
if ARGV[2] ~= '' then
  vt_ms = tonumber(ARGV[2])
end
-- The caller reads the bodies of what it receives (not of what it pops: they are gone after this call).
local caller_reads = ARGV[5] == '1' and not pop
-- Redis commands per call, not per message: one HMGET of up to 1000 fields for each slice of candidates
-- (so no copy of its reply), then one ZADD/ZREM, HSET and HDEL for all (in slices, below Lua's unpack
-- limit).
local per = caller_reads and 1000 or 500 -- candidates per slice: one or two fields read of each
local out, again_out, moved, taken = {}, {}, 0, 0
local n_out = 0 -- values in out
-- What the call writes, gathered while reading: the ZSET members (or, for pop, ids) and hash fields.
local members, writes, removes = {}, {}, {}
local n_writes = 0
local deadline = string.format('%.0f', now_ms + vt_ms)
-- The usual receive counts as strings, so writing them back needs no number formatting.
local RC = { '1', '2', '3', '4', '5', '6', '7', '8', '9' }
-- Taken messages keep their place until the end, so each range query skips them with an offset.
while taken < count and moved < 1000 do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', taken, math.min(count - taken, per))
  local nids = #ids
  if nids == 0 then
    break
  end
  -- fields: <id>:rc of each candidate, or <id>, <id>:rc when the bodies are read here; step: how many
  -- fields each candidate has, so its <id>:rc is at step * i in fields and in their HMGET reply (vals).
  local fields, step = {}, caller_reads and 1 or 2
  if caller_reads then
    for i = 1, nids do
      fields[i] = ids[i] .. ':rc'
    end
  else
    for i = 1, nids do
      local id = ids[i]
      fields[2 * i - 1], fields[2 * i] = id, id .. ':rc'
    end
  end
  local vals = redis.call('HMGET', KEYS[2], unpack(fields))
  -- A first-receive time matters only for a message received before (a first receive sets it to now).
  local again = {}
  for i = 1, nids do
    if vals[step * i] then
      again[#again + 1] = ids[i] .. ':fr'
    end
  end
  local frs = #again > 0 and redis.call('HMGET', KEYS[2], unpack(again)) or {}
  local gone, gone_fields, dead_ids = {}, {}, {}
  local k = 0
  for i = 1, nids do
    local id, rc, rc_field = ids[i], vals[step * i], fields[step * i]
    -- true: its body is there, the caller reads it
    local body = caller_reads or vals[2 * i - 1]
    local fr = nil
    if rc then
      k = k + 1
      fr = frs[k]
    end
    if not body or (maxrecv and tonumber(rc or '0') >= maxrecv) then
      gone[#gone + 1] = id
      gone_fields[#gone_fields + 1], gone_fields[#gone_fields + 2], gone_fields[#gone_fields + 3] =
        id, rc_field, id .. ':fr'
      if body then
        dead_ids[#dead_ids + 1] = id
      end
      moved = moved + 1
    else
      local n = rc and tonumber(rc) + 1 or 1
      if caller_reads then
        n_out = n_out + 1
        out[n_out] = id
      else
        out[n_out + 1], out[n_out + 2] = id, body
        n_out = n_out + 2
      end
      if n > 1 then
        local e = #again_out
        again_out[e + 1], again_out[e + 2], again_out[e + 3] = taken + 1, n, fr or now
      end
      if pop then
        local r = #removes
        removes[r + 1], removes[r + 2], removes[r + 3] = id, rc_field, id .. ':fr'
        members[taken + 1] = id
      else
        writes[n_writes + 1], writes[n_writes + 2] = rc_field, RC[n] or tostring(n)
        n_writes = n_writes + 2
        if n == 1 then
          writes[n_writes + 1], writes[n_writes + 2] = id .. ':fr', now
          n_writes = n_writes + 2
        end
        members[2 * taken + 1], members[2 * taken + 2] = deadline, id
      end
      taken = taken + 1
    end
  end
  if #gone > 0 then
    -- The bodies of the messages moved to the dead-letter queue (read here also when the caller reads the
    -- bodies of those taken); one that is missing is only removed.
    local dead_members, dead_bodies = {}, {}
    if #dead_ids > 0 then
      local bodies = redis.call('HMGET', KEYS[2], unpack(dead_ids))
      for j = 1, #dead_ids do
        if bodies[j] then
          dead_members[#dead_members + 1], dead_members[#dead_members + 2] = now, dead_ids[j]
          dead_bodies[#dead_bodies + 1], dead_bodies[#dead_bodies + 2] = dead_ids[j], bodies[j]
        end
      end
    end
    call_in_slices('ZREM', KEYS[1], gone, 1, #gone)
    call_in_slices('HDEL', KEYS[2], gone_fields, 1, #gone_fields)
    if #dead_members > 0 then
      call_in_slices('ZADD', KEYS[3], dead_members, 1, #dead_members)
      call_in_slices('HSET', KEYS[4], dead_bodies, 1, #dead_bodies)
      redis.call('HINCRBY', KEYS[4], 'totalsent', #dead_members / 2)
    end
  end
end
if taken == 0 then
  local nxt = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  return { 'ok', now_ms, nxt[2] and tonumber(nxt[2]) or -1, out, again_out }
end
redis.call('HINCRBY', KEYS[2], 'totalrecv', taken)
if pop then
  call_in_slices('ZREM', KEYS[1], members, 1, #members)
  call_in_slices('HDEL', KEYS[2], removes, 1, #removes)
else
  call_in_slices('ZADD', KEYS[1], members, 1, #members)
  call_in_slices('HSET', KEYS[2], writes, 1, #writes)
end
return { 'ok', now_ms, -1, out, again_out }
