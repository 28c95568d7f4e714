-- Sluice reset script: forgets the state behind every key given (the keys of one identity,
-- sharing one hash tag, so one Cluster slot). Runs through EVAL/EVALSHA because the store
-- speaks to Redis only through eval (see EvalClient).
--
-- KEYS     the state keys to delete (any number, zero included)
-- ARGV     none
-- Returns  integer, how many of the keys existed

if #KEYS == 0 then
  return 0
end
local deleted = 0
for i = 1, #KEYS, 1000 do
  deleted = deleted + redis.call('DEL', unpack(KEYS, i, math.min(i + 999, #KEYS)))
end
return deleted
