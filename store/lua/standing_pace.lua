-- standing_pace.lua: pace the edits of a standing answer's message as it
-- is used (ask-user.md §9: at most one edit a minute per standing
-- answer): the first caller in each interval may edit, across replicas.
--
-- KEYS[1]  standing hash        <prefix>standing:{<agent>}:<key>
-- ARGV[1]  gen of the keep
-- ARGV[2]  now, unix ms
-- ARGV[3]  the interval, ms
--
-- Returns 1 when the caller may edit now (the time is recorded in the
-- hash's field edited), 0 when an edit was made within the interval or
-- that keep no longer stands.
if redis.call('HGET', KEYS[1], 'gen') ~= ARGV[1] then
  return 0
end
local last = tonumber(redis.call('HGET', KEYS[1], 'edited'))
if last and tonumber(ARGV[2]) - last < tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], 'edited', ARGV[2])
return 1
