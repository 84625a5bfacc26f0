-- The commit of rfq_claim_batch.lua: rfq's LREM nextlog -1 <id> and DEL of the message, per message, in one
-- script per batch. KEYS = nextlog, then the message key of each id; ARGV = the ids.
-- Reply: how many ids were still in the nextlog.
local done = 0
for i = 1, #ARGV do
  done = done + redis.call('LREM', KEYS[1], -1, ARGV[i])
  redis.call('DEL', KEYS[i + 1])
end
return done
