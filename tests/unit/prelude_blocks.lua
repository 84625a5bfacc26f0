-- notes: never sent (a comment-only block), even when a script says helper_a
-- or helper_b.

-- the first helper
local function helper_a(x)
  return x

end

-- the second: uses the third
local function helper_b(x)
  return helper_c(x) -- not helper_a: a comment
end

--[[ a long comment naming helper_a ]]
local shared = {}
local function helper_c(x)
  shared[x] = true
end

local function helper_a_longer()
end
