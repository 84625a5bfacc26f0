--[[ streams dead_letter: move pending entries of a group to a dead-letter stream.

Input:
  KEYS[1]  ferroq:stream:{name} (STREAM)
  KEYS[2]  ferroq:stream:{dead} (STREAM, the dead-letter stream; created if missing)
  ARGV[1]  {name}, recorded in the moved entries
  ARGV[2]  the group
  ARGV[3]  the error text to record ('' for none)
  ARGV[4..] entry ids

Output: {id, ...} the ids that were pending in the group and are now in the dead-letter stream, in
input order. An id that is not pending (acknowledged, or never delivered) is left alone. A pending id
whose entry was deleted from the stream is only acknowledged. A missing group is an error (NOGROUP).
]]
local moved = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local p = redis.call('XPENDING', KEYS[1], ARGV[2], id, id, 1)
  if #p == 1 and stream_dead_letter(KEYS[1], KEYS[2], ARGV[1], ARGV[2], id, p[1][4], ARGV[3]) then
    moved[#moved + 1] = id
  end
end
return moved
