-- timers_due.lua: hand out timers whose time has come, each to one caller
-- at a time: a timer handed out is put back hold ms later, so a replica
-- that dies while firing it leaves it to another, and the firer removes it
-- once done (TimerDone).
--
-- KEYS[1]  timers zset          <prefix>timers
-- ARGV[1]  now, unix ms
-- ARGV[2]  hold, ms
-- ARGV[3]  most timers handed out
--
-- Returns the members handed out, oldest first.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local later = tonumber(ARGV[1]) + tonumber(ARGV[2])
for _, m in ipairs(due) do
  redis.call('ZADD', KEYS[1], 'XX', later, m)
end
return due
