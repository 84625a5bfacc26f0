--[[ rsmq send: add messages to a queue (RSMQ sendMessage, for one message or a chunk of a batch).

Input:
  KEYS[1]  {ns}:{q} (ZSET: id -> epoch ms at which it becomes visible)
  KEYS[2]  {ns}:{q}:Q (HASH)
  KEYS[3]  {ns}:{q}:published:{token} (STRING: the ids the first call with this token sent; RSMQ ignores it)
  ARGV[1]  delay in ms, or '' for the queue's delay (stored in seconds; a fraction is honoured, rounded to ms)
  ARGV[2]  the longest message of the call, in UTF-16 code units (RSMQ's measure)
  ARGV[3]  the realtime channel {ns}:rt:{q} to PUBLISH the queue size on, or '' for none
  ARGV[4]  how long the token's record is kept, in ms
  ARGV[5..] per message: 22 random characters of [A-Za-z0-9], then the message

Output: {'ok', {id, ...}} in input order | {'done', {id, ...}} | {'notfound'} | {'toolong', maxsize}.
The record holds the ids of the messages earlier calls with this token sent, k of them: those messages
are not sent again (a retry after a lost reply, or an idempotent send repeated with the same dedup key).
'done': k covers the whole chunk; nothing is written and the ids are the recorded ones. 'ok': the ids of
the messages sent by this call (all of them, or those after the first k when the earlier call had fewer),
and the record grows by them. Nothing is written unless the reply is 'ok'.

The id of message i (0-based) is base36(now_us + i) .. its 22 characters, now_us = TIME in epoch
microseconds: RSMQ's 32-character id, lowercase base36 with no padding. Within one ZSET score, members
sort by id, so messages sent in the same millisecond are received in send order. Every message gets
score now_ms + delay_ms. totalsent grows by the number of messages.
]]
local record = redis.call('GET', KEYS[3])
local sent = record_ids(record)
if record and #sent >= (#ARGV - 4) / 2 then
  return { 'done', sent }
end
local q = redis.call('HMGET', KEYS[2], 'vt', 'delay', 'maxsize')
if not q[1] or not q[2] or not q[3] then
  return { 'notfound' }
end
local maxsize = tonumber(q[3])
if maxsize ~= -1 and tonumber(ARGV[2]) > maxsize then
  return { 'toolong', q[3] }
end
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local delay_ms = math.floor(tonumber(q[2]) * 1000 + 0.5)
if ARGV[1] ~= '' then
  delay_ms = tonumber(ARGV[1])
end
local score = string.format('%.0f', now_ms + delay_ms)

local digits = '0123456789abcdefghijklmnopqrstuvwxyz'
local function base36(n)
  local s = ''
  repeat
    local d = n % 36
    s = string.sub(digits, d + 1, d + 1) .. s
    n = (n - d) / 36
  until n == 0
  return s
end

local ids, members, bodies = {}, {}, {}
for i = 5 + 2 * #sent, #ARGV, 2 do
  local id = base36(now_us + #ids) .. ARGV[i]
  ids[#ids + 1] = id
  members[#members + 1], members[#members + 2] = score, id
  bodies[#bodies + 1], bodies[#bodies + 2] = id, ARGV[i + 1]
end
call_in_slices('ZADD', KEYS[1], members, 1, #members)
call_in_slices('HSET', KEYS[2], bodies, 1, #bodies)
redis.call('HINCRBY', KEYS[2], 'totalsent', #ids)
if ARGV[3] ~= '' then
  redis.call('PUBLISH', ARGV[3], redis.call('ZCARD', KEYS[1]))
end
extend_record(KEYS[3], record, ids, ARGV[4])
return { 'ok', ids }
