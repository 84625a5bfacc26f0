--[[ spark group_commit: a consumer group's position follows the micro-batches Spark has committed.

Input:
  KEYS[1]  ferroq:stream:<name> (STREAM)
  ARGV[1]  the group
  ARGV[2]  the id of the last entry of the committed batch
  ARGV[3]  the stream's logical read counter at that id (entries added up to it), or '' if unknown

Output: 1 if the group's last-delivered id moved (or the group was made at it), 0 if it was already at or
past it (a commit repeated after a restart never moves a group back).

The group then shows the query's progress to XINFO GROUPS and `ferroq stream group info`: its
last-delivered id is the end of the last committed batch, and, with the read counter (Redis >= 7.0),
its lag counts the entries the query has not committed yet.
]]
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local counter = {}
if ARGV[3] ~= '' then
  counter = { 'ENTRIESREAD', ARGV[3] }
end
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[1])
if not ok then
  groups = {}
end
for _, g in ipairs(groups) do
  local name, last
  for i = 1, #g, 2 do
    if g[i] == 'name' then
      name = g[i + 1]
    elseif g[i] == 'last-delivered-id' then
      last = g[i + 1]
    end
  end
  if name == ARGV[1] then
    local ams, aseq = parse(last)
    local bms, bseq = parse(ARGV[2])
    if ams > bms or (ams == bms and aseq >= bseq) then
      return 0
    end
    redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], ARGV[2], unpack(counter))
    return 1
  end
end
redis.call('XGROUP', 'CREATE', KEYS[1], ARGV[1], ARGV[2], 'MKSTREAM', unpack(counter))
return 1
