-- ferroq's Lua prelude: helpers in one place. Each script is sent after the blocks of this file it uses
-- (ferroq.protocol.with_helpers, and its Rust twin): a block starts, after an empty line, at a line that
-- begins with `--` or `local `, and a script uses it when its code names one of the block's `local`
-- definitions. Blocks of comments only, such as this one, are notes: never sent.

-- unpack() fails past ~8000 values (Lua's C stack limit), so long argument lists go in slices of
-- 1000 (an even number: field/value and score/member pairs stay whole). key nil: no key argument.
local function call_in_slices(command, key, list, first, last)
  for i = first, last, 1000 do
    if key then
      redis.call(command, key, unpack(list, i, math.min(i + 999, last)))
    else
      redis.call(command, unpack(list, i, math.min(i + 999, last)))
    end
  end
end

-- HMGET key fields..., in slices of 1000 fields: the values, in the order of fields (nil for a missing one).
-- Up to 1000 fields (the usual call), HMGET's own reply: no copy of it.
local function hmget_all(key, fields)
  if #fields > 0 and #fields <= 1000 then
    return redis.call('HMGET', key, unpack(fields))
  end
  local vals = {}
  for i = 1, #fields, 1000 do
    local got = redis.call('HMGET', key, unpack(fields, i, math.min(i + 999, #fields)))
    for j = 1, #got do
      vals[i + j - 1] = got[j]
    end
  end
  return vals
end

-- A publish record (rsmq/send-3, streams/publish-2): the ids written for one chunk token, space-separated.
local function record_ids(record)
  local ids = {}
  for id in string.gmatch(record or '', '%S+') do
    ids[#ids + 1] = id
  end
  return ids
end

-- Adds ids (written now) to the record `record` (its old value, or false) at key, kept ms milliseconds.
local function extend_record(key, record, ids, ms)
  local all = table.concat(ids, ' ')
  if record then
    all = record .. ' ' .. all
  end
  redis.call('SET', key, all, 'PX', ms)
end

-- Redis server time in epoch milliseconds: every deadline and due time comes from here.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A message's record, the value of field <id> in its topic's deliveries HASH:
--   <count>[ <claimed_at_ms>[ <owner>]][\n<last error>]
-- count: how many times it was claimed, the fencing token of the current claim. claimed_at_ms (and owner,
-- when the claim named one) only while a ferroq claim holds it. The last error only if it was dead-lettered
-- into this topic. Owners have no whitespace, so the parts split unambiguously. One field per message keeps
-- a claim to one HSET field and a commit to one HDEL field.

-- The parts of record v: count, claimed_at (nil if not claimed), owner (nil if none), error (nil if none).
local function parse_record(v)
  local head, err = string.match(v, '^([^\n]*)\n(.*)$')
  local count, at, owner = string.match(head or v, '^(%d*) ?(%d*) ?(%S*)')
  return count, at ~= '' and at or nil, owner ~= '' and owner or nil, err
end

-- Record v once its claim ended without a commit (release, harvest): the count and last error stay.
local function unclaimed(v)
  local count, _, _, err = parse_record(v)
  return err and count .. '\n' .. err or count
end

-- Drops a message's record: its count, claim, owner and last error.
local function forget(deliveries, id)
  redis.call('HDEL', deliveries, id)
end

-- A claim's records in rfq:<t>:claims: field <token> is '<claimed_at_ms> <owner or -> <id> <id> ...', the
-- claim's open ids in claim order; field <token>:d (only when there are any) lists those of its ids that
-- have a record in the deliveries HASH (claimed before). Tokens have no ':', so the two never collide.

-- The parts of claim record v: claimed_at, owner, and its ids as one space-separated string.
local function parse_claim(v)
  return string.match(v, '^(%d+) (%S+) ?(.*)$')
end

-- The words of a space-separated string, as a list, and as a set when set is given.
local function words(text, set)
  local list = {}
  for w in string.gmatch(text or '', '%S+') do
    list[#list + 1] = w
    if set then
      set[w] = true
    end
  end
  return list
end

-- Counts a claim of id that ended without a commit (released, harvested, taken over) in its record.
local function end_claim(deliveries, id)
  local v = redis.call('HGET', deliveries, id)
  local count, err = 0, nil
  if v then
    local c, _, _, e = parse_record(v)
    count, err = tonumber(c) or 0, e
  end
  redis.call('HSET', deliveries, id, (count + 1) .. (err and '\n' .. err or ''))
end

-- Writes claim token's records again without the ids in gone (a set); deletes them and the claim's lease
-- when no id is left. at, owner, ids: its record's parts (parse_claim). Returns how many ids it dropped.
local function drop_from_claim(claims, claim_leases, token, at, owner, ids, gone)
  local kept = {}
  for _, id in ipairs(words(ids)) do
    if not gone[id] then
      kept[#kept + 1] = id
    end
  end
  local dropped = select(2, string.gsub(ids, '%S+', '')) - #kept
  if #kept == 0 then
    redis.call('HDEL', claims, token, token .. ':d')
    redis.call('ZREM', claim_leases, token)
  elseif dropped > 0 then
    redis.call('HSET', claims, token, at .. ' ' .. owner .. ' ' .. table.concat(kept, ' '))
  end
  return dropped
end

-- Takes ids out of every open claim but token's, counting each such claim as ended: after rfq's blind
-- harvest moved held ids back, the claim taking them again fences out the old holder. It reads every open
-- claim, so it runs only when SADD found an id already in flight.
local function take_from_claims(claims, claim_leases, deliveries, ids, token)
  local gone = {}
  for _, id in ipairs(ids) do
    gone[id] = true
  end
  local all = redis.call('HGETALL', claims)
  for i = 1, #all, 2 do
    local other = all[i]
    if other ~= token and not string.find(other, ':', 1, true) then
      local at, owner, held = parse_claim(all[i + 1])
      local lost = {}
      for _, id in ipairs(words(held)) do
        if gone[id] then
          lost[#lost + 1] = id
        end
      end
      if #lost > 0 then
        drop_from_claim(claims, claim_leases, other, at, owner, held, gone)
        for _, id in ipairs(lost) do
          end_claim(deliveries, id)
        end
      end
    end
  end
end

-- The token of the open claim that lists id, or nil (reads every open claim: for bare ids only).
local function claim_holding(claims, id)
  local all = redis.call('HGETALL', claims)
  for i = 1, #all, 2 do
    if not string.find(all[i], ':', 1, true) then
      local listed = {}
      words(select(3, parse_claim(all[i + 1])), listed)
      if listed[id] then
        return all[i]
      end
    end
  end
  return nil
end

-- The token of the open claim that holds id when the id's delivery count is count (a fence of digits for
-- an id of a claim: a Message made by hand, or kept as id and delivery count), or nil. Reads every open
-- claim: only for such fences.
local function claim_by_count(claims, inflight, deliveries, id, count)
  if redis.call('SISMEMBER', inflight, id) == 0 then
    return nil
  end
  local v = redis.call('HGET', deliveries, id)
  local ended = v and tonumber((parse_record(v))) or 0
  if tostring(ended + 1) ~= count then
    return nil
  end
  return claim_holding(claims, id)
end

-- Whether message id (record v, false if none) is leased: its record says a ferroq claim holds it (such a
-- claim always has a lease), or it has a lease without one (one given by harvest at first sight).
local function leased(leases, id, v)
  return (v and string.find(v, '^%d+ ') ~= nil) or redis.call('ZSCORE', leases, id) ~= false
end

-- Fencing: whether token (the delivery count a claim returned) is the current claim of message id (record
-- v, false if none): it is leased and its count is token. The common case, a claim record starting with
-- '<token> ', is decided without a call. An empty token (a bare id, unfenced) asks only whether it is leased.
local claimed_prefix = {}
local function holds(leases, id, token, v)
  if token == '' then
    return leased(leases, id, v)
  end
  if not v then
    return false
  end
  local p = claimed_prefix[token]
  if not p then
    p = token .. ' '
    claimed_prefix[token] = p
  end
  return string.find(v, p, 1, true) == 1 or (string.match(v, '^%d+') == token and leased(leases, id, v))
end

-- Whether a commit-like call (dead-letter; commit does the same in bulk) takes id: held with a matching
-- token, or, for an empty token (a bare id, unfenced), still claimed by anyone (in the nextlog or
-- leased). Removes it from the nextlog when it does.
local function take_claim(nextlog, leases, id, token, v)
  if token == '' then
    return redis.call('LREM', nextlog, '-1', id) > 0 or leased(leases, id, v)
  end
  if holds(leases, id, token, v) then
    redis.call('LREM', nextlog, '-1', id)
    return true
  end
  return false
end

-- Moves up to `limit` delayed ids that are due (score <= now) to the backlog's consume end, the
-- earliest due consumed first. Returns how many moved.
local function promote(backlog, delayed, now, limit)
  local due = redis.call('ZRANGEBYSCORE', delayed, '-inf', now, 'LIMIT', 0, limit)
  if #due == 0 then
    return 0
  end
  call_in_slices('ZREM', delayed, due, 1, #due)
  local reversed = {}
  for i = #due, 1, -1 do
    reversed[#reversed + 1] = due[i]
  end
  call_in_slices('RPUSH', backlog, reversed, 1, #reversed)
  return #due
end

-- Streams: moves entry id of stream src, pending in group, to stream dead with where it came from, how
-- often it was delivered and the error, then acknowledges it in group. Returns false (only acknowledging)
-- when the entry was deleted from src meanwhile. Entries are flat field/value lists, so the record's
-- fields follow the message's own.
local function stream_dead_letter(src, dead, source, group, id, deliveries, err)
  local entry = redis.call('XRANGE', src, id, id)
  redis.call('XACK', src, group, id)
  if #entry == 0 then
    return false
  end
  local fields = entry[1][2]
  local n = #fields
  fields[n + 1], fields[n + 2] = 'ferroq:source', source
  fields[n + 3], fields[n + 4] = 'ferroq:id', id
  fields[n + 5], fields[n + 6] = 'ferroq:group', group
  fields[n + 7], fields[n + 8] = 'ferroq:deliveries', tostring(deliveries)
  fields[n + 9], fields[n + 10] = 'ferroq:error', err
  redis.call('XADD', dead, '*', unpack(fields))
  return true
end
