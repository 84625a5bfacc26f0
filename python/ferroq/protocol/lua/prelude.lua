-- ferroq's Lua prelude: put before every script (by the Rust core and the pure client alike), so
-- helpers live in one place. It only defines locals; a script that does not use them is unchanged.

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

-- Redis server time in epoch milliseconds: every deadline and due time comes from here.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Drops every deliveries-HASH field of one id: its count, claim time, owner and last error.
local function forget(deliveries, id)
  redis.call('HDEL', deliveries, id, id .. ':at', id .. ':owner', id .. ':error')
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

-- Whether a commit-like call (commit, dead-letter) takes id: leased with a matching token, or, for an
-- empty token (a bare id, unfenced), still claimed by anyone. Removes it from the nextlog when it does.
-- leased: its ZSCORE in the leases ZSET (false if none); held: its count in the deliveries HASH (the
-- current claim's token, false if none). Callers read both in bulk (ZMSCORE, HMGET) or per id.
local function take_claim(nextlog, id, token, leased, held)
  if token == '' then
    return redis.call('LREM', nextlog, -1, id) > 0 or leased ~= false
  end
  if leased and held == token then
    redis.call('LREM', nextlog, -1, id)
    return true
  end
  return false
end
