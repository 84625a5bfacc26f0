--[[ rfq commit: delete messages whose claim is still held (fenced by the claim).

Input:
  KEYS[1..6]     rfq:<topic>:nextlog, :leases, :deliveries, :claims, :claim_leases, :inflight
  KEYS[7..]      rfq:<topic>:message:<id> for each message, in groups (below)
  ARGV[1]        the length of the message key prefix rfq:<topic>:message: (an id is the rest of its key)
  ARGV[2..]      per group: <fence>, k: the group's next k message keys share the fence

Output: { committed, then the ids given that were not committed }: the client, which knows the ids it
gave, has the committed ones in input order without their coming back (an id given twice counts once).

A fence with a letter is a claim's token: its ids are committed only while that claim still lists them.
Digits are the delivery count of a claim of the previous layout (a per-id record and lease, see the
prelude's holds). '' commits without fencing (bare ids): whatever holds the id, ferroq or a plain rfq
consumer, as long as it is in the nextlog, leased or in flight. Each committed id leaves the nextlog as
LREM nextlog -1 <id> would take it, its body goes, and every side entry: the in-flight set, its claim's
records (deleted with the claim's lease when the claim has no id left), a per-id lease and its record in
the deliveries HASH. An id listed twice is committed once.

Speed: a claim's record is read once (HGET). A whole claim committed in claim order (the usual case) is
recognised by comparing its id string with the ids joined, with no other work per id in Lua; its ids are
then the nextlog's oldest claims, so one LRANGE and one LTRIM unlist them all (see unlist for the other
cases). A claim's first ids in claim order (a consumer that commits a claim in parts, as it handles them)
cost no work per id the claim still holds either: the record keeps the rest of its id string.
]]
local nextlog, leases, deliveries = KEYS[1], KEYS[2], KEYS[3]
local claims, claim_leases, inflight = KEYS[4], KEYS[5], KEYS[6]
local FIRST_BODY = 7
local id_from = tonumber(ARGV[1]) + 1
-- The ids, from the message keys (passing them again as arguments would cost as much as the keys).
local ids = {}
for i = FIRST_BODY, #KEYS do
  ids[i] = string.sub(KEYS[i], id_from)
end
-- Where ids[first..last] end in a claim's id string held when they are its first words, in that order:
-- the index of the next word (#held + 2 when they are all of it); nil otherwise. One table.concat and one
-- comparison: Lua interns every string, so joined ids equal to held are held itself (about 0.25 us per id
-- less than comparing word by word with string.find, in calls of 1000).
local function claim_prefix_end(held, first, last)
  if first > last then
    return 1
  end
  local joined = table.concat(ids, ' ', first, last)
  local n = #joined
  if n == #held then
    return joined == held and n + 2 or nil
  end
  if n > #held or string.byte(held, n + 1) ~= 32 or string.sub(held, 1, n) ~= joined then
    return nil
  end
  return n + 2
end

-- The usual call: one claim, committed whole in claim order, none of its ids a redelivery (no ':d' record),
-- its ids still the nextlog's tail block. It is committed here with no table built per id. Any other call
-- takes the general path below.
local function commit_whole_claim()
  local token, k = ARGV[2], #KEYS - FIRST_BODY + 1
  if #ARGV ~= 3 or tonumber(ARGV[3]) ~= k or k == 0 or not string.find(token, '%a') then
    return nil
  end
  local v = redis.call('HGET', claims, token)
  if not v then
    return nil
  end
  local _, _, held = parse_claim(v)
  if not held then
    return nil -- not a record this script wrote: the general path deals with it
  end
  local last = FIRST_BODY + k - 1
  if claim_prefix_end(held, FIRST_BODY, last) ~= #held + 2 or redis.call('HEXISTS', claims, token .. ':d') == 1
      or redis.call('LINDEX', nextlog, -1) ~= ids[FIRST_BODY] or redis.call('LINDEX', nextlog, -k) ~= ids[last] then
    return nil
  end
  -- A tail block of k entries that starts and ends with the claim's ids is them (see the general path).
  redis.call('LTRIM', nextlog, 0, -k - 1)
  redis.call('HDEL', claims, token)
  redis.call('ZREM', claim_leases, token)
  for i = FIRST_BODY, last, 1000 do
    local upto = math.min(i + 999, last)
    redis.call('DEL', unpack(KEYS, i, upto))
    redis.call('SREM', inflight, unpack(ids, i, upto))
  end
  return { k }
end
local whole = commit_whole_claim()
if whole then
  return whole
end

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

local taken, keys, n = {}, {}, 0 -- committed ids, in input order, and the KEYS index of each body
local done = {}
local forget = {} -- ids whose deliveries record and per-id lease go
local bare_taken = false
local unlisted = nil -- ids already taken out of the nextlog (a whole claim at its tail)
local by_count = {} -- claim token -> ids committed with a delivery count fence
local a, key = 2, FIRST_BODY

-- Accepts the messages of KEYS[first..last] whose id ok(id) accepts.
local function accept(first, last, ok)
  for i = first, last do
    local id = ids[i]
    if not done[id] and ok(id) then
      done[id] = true
      n = n + 1
      taken[n], keys[n] = id, i
    end
  end
end

while a <= #ARGV do
  local fence, k = ARGV[a], tonumber(ARGV[a + 1])
  local first, last = key, key + k - 1
  if string.find(fence, '%a') then
    local v = redis.call('HGET', claims, fence)
    if v then
      local at, owner, held = parse_claim(v)
      -- Where the group's ids end in the claim's id string when they are its first ids, in claim order.
      local rest = k > 0 and held and claim_prefix_end(held, first, last)
      local gone = {}
      local function of_the_claim(id) -- every id of the group is the claim's
        gone[id] = true
        return true
      end
      if rest and rest == #held + 2 then -- the whole claim, in claim order
        if redis.call('LINDEX', nextlog, -1) == ids[first]
            and redis.call('LINDEX', nextlog, -k) == ids[last] then
          -- The claim's ids were pushed as one block (one atomic script), and entries only ever leave
          -- the middle of a list: a tail block of k entries that starts and ends with them is them.
          redis.call('LTRIM', nextlog, 0, -k - 1)
          unlisted = unlisted or {}
          for i = first, last do
            unlisted[ids[i]] = true
          end
        end
        accept(first, last, of_the_claim)
        redis.call('HDEL', claims, fence)
        redis.call('ZREM', claim_leases, fence)
      elseif rest then
        -- The claim's first ids in claim order (a consumer committing what it has handled so far): the
        -- record keeps the rest of its id string as it is, so committing a claim in parts costs no work
        -- per id it still holds.
        accept(first, last, of_the_claim)
        redis.call('HSET', claims, fence, at .. ' ' .. owner .. ' ' .. string.sub(held, rest))
      else
        local listed = {}
        words(held, listed)
        accept(first, last, function(id)
          if listed[id] then
            gone[id] = true
            return true
          end
          return false
        end)
        drop_from_claim(claims, claim_leases, fence, at, owner, held, gone)
      end
      local recorded = redis.call('HGET', claims, fence .. ':d')
      if recorded then
        for _, id in ipairs(words(recorded)) do
          if gone[id] then
            forget[#forget + 1] = id
          end
        end
        if redis.call('HEXISTS', claims, fence) == 0 then
          redis.call('HDEL', claims, fence .. ':d')
        end
      end
    end
  elseif fence == '' then
    bare_taken = true
    accept(first, last, function(id)
      forget[#forget + 1] = id
      return true -- checked below, once the nextlog was searched
    end)
  else
    accept(first, last, function(id)
      if holds(leases, id, fence, redis.call('HGET', deliveries, id)) then
        forget[#forget + 1] = id
        return true
      end
      local token = claim_by_count(claims, inflight, deliveries, id, fence)
      if token then
        by_count[token] = by_count[token] or {}
        by_count[token][id] = true
        forget[#forget + 1] = id
        return true
      end
      return false
    end)
  end
  key = key + k
  a = a + 2
end

local removed
if unlisted then
  local rest, m = {}, 0
  for i = 1, n do
    if not unlisted[taken[i]] then
      m = m + 1
      rest[m] = taken[i]
    end
  end
  removed = unlist(rest, m)
  if removed ~= true then
    for id in pairs(unlisted) do
      removed[id] = true
    end
  end
else
  removed = unlist(taken, n)
end
if bare_taken and removed ~= true then
  -- Bare ids that were not in the nextlog count only if leased or in flight.
  local bare = {}
  local b, at = 2, FIRST_BODY
  while b <= #ARGV do
    local k = tonumber(ARGV[b + 1])
    if ARGV[b] == '' then
      for i = at, at + k - 1 do
        bare[ids[i]] = true
      end
    end
    b, at = b + 2, at + k
  end
  local kept = 0
  for i = 1, n do
    local id = taken[i]
    if not bare[id] or removed[id] or leased(leases, id, redis.call('HGET', deliveries, id))
        or redis.call('SISMEMBER', inflight, id) == 1 then
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
  end
  call_in_slices('DEL', false, bodies, 1, n)
  call_in_slices('SREM', inflight, taken, 1, n)
end
if #forget > 0 then
  if redis.call('EXISTS', leases) == 1 then
    call_in_slices('ZREM', leases, forget, 1, #forget)
  end
  call_in_slices('HDEL', deliveries, forget, 1, #forget)
end
for token, gone in pairs(by_count) do
  local v = redis.call('HGET', claims, token)
  if v then
    local at, owner, held = parse_claim(v)
    drop_from_claim(claims, claim_leases, token, at, owner, held, gone)
  end
end
if bare_taken and n > 0 then
  -- Bare ids that an open claim listed leave that claim too (rare: reads every open claim).
  local gone = {}
  for i = 1, n do
    gone[taken[i]] = true
  end
  local all = redis.call('HGETALL', claims)
  for i = 1, #all, 2 do
    if not string.find(all[i], ':', 1, true) then
      local at, owner, held = parse_claim(all[i + 1])
      drop_from_claim(claims, claim_leases, all[i], at, owner, held, gone)
    end
  end
end
local out, seen = { n }, {}
if n < #KEYS - FIRST_BODY + 1 then
  for i = 1, n do
    seen[taken[i]] = true
  end
  for i = FIRST_BODY, #KEYS do
    local id = ids[i]
    if not seen[id] then
      out[#out + 1] = id
      seen[id] = true
    end
  end
end
return out
