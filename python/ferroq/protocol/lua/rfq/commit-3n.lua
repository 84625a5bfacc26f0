--[[ rfq commit: delete messages whose claim is still held, fenced by the delivery count.

Input:
  KEYS[1]        rfq:<topic>:nextlog
  KEYS[2]        rfq:<topic>:leases
  KEYS[3]        rfq:<topic>:deliveries
  KEYS[4..n+3]   rfq:<topic>:message:<id> for each message
  ARGV[1..2n]    per message, in the order of KEYS[4..]: <id>, <token>

Output: the ids committed, in input order.

token is the delivery count returned by the claim. A message is committed only while it is leased
and its delivery count still equals the token: after the lease expired and the message was requeued
or claimed again, the old holder's commit is refused and the new claim is untouched.
An empty token commits without fencing (a bare id): whatever holds the id, ferroq or a plain rfq
consumer. Each committed id leaves the nextlog as LREM nextlog -1 <id> would take it (counting from
the tail, where the oldest claims sit; the backlog is never scanned), and every side entry goes: its
lease and its record in the deliveries HASH. An id listed twice is committed once.

Speed: messages go in rounds of up to 1000. One HMGET reads the round's records, which decide the
fencing without a call per message (see the prelude's holds). When the committed ids are the nextlog's
oldest claims in claim order (the usual case: a batch committed as it was claimed), one LRANGE and one
LTRIM unlist them all. Up to 7 others cost one LREM each; more are found in one walk from the tail and
removed with one LREM (see unlist_walk). One DEL, ZREM and HDEL clear the rest.
]]
local nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
-- Marks entries to remove in one LREM. It has spaces, so it is never an id (ids have no whitespace).
local TOMBSTONE = ' ferroq: committed '
-- From this many ids out of order on, one walk from the tail replaces one LREM walk per id.
local WALK_FROM = 8

-- Removes ids[1..m] (distinct) from the nextlog with the end state of LREM nextlog -1 <id> for each, and
-- marks each one removed. One walk from the tail, in slices of 1000 and only as far as the deepest of them,
-- finds each id's last occurrence; those entries become the tombstone (LSET) and one LREM takes them all.
-- One LREM per id would walk from the tail again for each: with batches committed out of claim order
-- (several consumers), that is the ids times the nextlog's length.
local function unlist_walk(ids, m, removed)
  local wanted, at, found = {}, {}, 0
  for i = 1, m do
    wanted[ids[i]] = true
  end
  local from = redis.call('LLEN', nextlog) -- entries from this index to the tail have been looked at
  while found < m and from > 0 do
    local first = math.max(0, from - 1000)
    local slice = redis.call('LRANGE', nextlog, first, from - 1)
    for j = #slice, 1, -1 do
      local id = slice[j]
      if wanted[id] then
        wanted[id] = nil
        found = found + 1
        at[found] = first + j - 1
        removed[id] = true
      end
    end
    from = first
  end
  for i = 1, found do
    redis.call('LSET', nextlog, at[i], TOMBSTONE)
  end
  if found > 0 then
    redis.call('LREM', nextlog, -found, TOMBSTONE)
  end
end

-- Removes each of ids[1..n] (distinct) from the nextlog, with the end state of LREM nextlog -1 <id> for
-- each. Returns true when all were removed, else the set of those removed.
local function unlist(ids, n)
  if n == 0 then
    return true
  end
  local tail = redis.call('LRANGE', nextlog, -n, -1)
  local len, k = #tail, 0
  -- The ids in claim order: ids[1..k] are the nextlog's last k entries, each its id's last occurrence.
  while k < len and tail[len - k] == ids[k + 1] do
    k = k + 1
  end
  local removed = true
  if k < n then
    -- Out of order: the tail still goes in one LTRIM while its entries are distinct ids of the call.
    removed = {}
    local ids_left = {}
    for i = 1, k do
      removed[ids[i]] = true
    end
    for i = k + 1, n do
      ids_left[ids[i]] = true
    end
    while k < len and ids_left[tail[len - k]] and not removed[tail[len - k]] do
      removed[tail[len - k]] = true
      k = k + 1
    end
  end
  if k > 0 then
    redis.call('LTRIM', nextlog, 0, -k - 1)
  end
  if removed ~= true then
    local left, m = {}, 0
    for i = 1, n do
      if not removed[ids[i]] then
        m = m + 1
        left[m] = ids[i]
      end
    end
    if m >= WALK_FROM then
      unlist_walk(left, m, removed)
    else
      for i = 1, m do
        if redis.call('LREM', nextlog, '-1', left[i]) > 0 then
          removed[left[i]] = true
        end
      end
    end
  end
  return removed
end

local out, nout, done = {}, 0, {}
local total = #KEYS - 3
for first = 1, total, 1000 do
  local last = math.min(first + 999, total)
  local ids = {}
  for i = first, last do
    ids[i - first + 1] = ARGV[2 * i - 1]
  end
  local records = redis.call('HMGET', deliveries, unpack(ids))
  -- The ids taken (and the KEYS index of their message); bare[i]: taken[i] came without a token (its
  -- record, or false), so it is committed only if it was still in the nextlog or is leased.
  local taken, keys, n, bare = {}, {}, 0, nil
  for j = 1, #ids do
    local id = ids[j]
    if not done[id] then
      local token = ARGV[2 * (first + j - 1)]
      if token == '' or holds(leases, id, token, records[j]) then
        done[id] = true
        n = n + 1
        taken[n], keys[n] = id, 3 + first + j - 1
        if token == '' then
          bare = bare or {}
          bare[n] = records[j] or false
        end
      end
    end
  end
  local removed = unlist(taken, n)
  if bare and removed ~= true then
    local kept = 0
    for i = 1, n do
      local id = taken[i]
      if bare[i] == nil or removed[id] or leased(leases, id, bare[i]) then
        kept = kept + 1
        taken[kept], keys[kept] = id, keys[i]
      end
    end
    n = kept
  end
  if n > 0 then
    local bodies = {}
    for i = 1, n do
      bodies[i] = KEYS[keys[i]]
      out[nout + i] = taken[i]
    end
    nout = nout + n
    redis.call('DEL', unpack(bodies))
    redis.call('ZREM', leases, unpack(taken, 1, n))
    redis.call('HDEL', deliveries, unpack(taken, 1, n))
  end
end
return out
