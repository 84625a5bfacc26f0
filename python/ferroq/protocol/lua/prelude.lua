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

