-- What a careful pure-Python rfq client writes to claim a batch (no leases, no fencing, no delivery
-- counts): rfq's LMOVE backlog -> nextlog and HGETALL per message, in one script per batch. The
-- benchmark's strongest hand-written rfq consumer; never sent by ferroq.
-- KEYS = backlog, nextlog; ARGV = count, message key prefix.
-- Reply: flat { id1, nfields1, f, v, ..., id2, ... }; an id whose hash is gone is left out.
local out = {}
for _ = 1, tonumber(ARGV[1]) do
  local id = redis.call('LMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT')
  if not id then
    break
  end
  local body = redis.call('HGETALL', ARGV[2] .. id)
  if #body > 0 then
    out[#out + 1] = id
    out[#out + 1] = #body / 2
    for i = 1, #body do
      out[#out + 1] = body[i]
    end
  end
end
return out
