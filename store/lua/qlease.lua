-- qlease.lua: the delivery lease of a question kept as a field of its hash
-- (no key of its own, no TTL to set): take, renew or give it up. The
-- field's value is "<until>:<token>:<holder>", until in unix ms by the
-- callers' clocks (as a question's deadline is); a value whose until has
-- passed, or an empty one (given up by add_message.lua), is free.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- KEYS[2]  the lease's key of the versions before the field
--          <prefix>lease:<kind>:{<id>}: a lease a replica of such a
--          version holds there is respected
-- ARGV[1]  op: acquire, renew or release
-- ARGV[2]  the lease's field, lease:<kind>
-- ARGV[3]  the fencing counter's field, fence:<kind>
-- ARGV[4]  holder
-- ARGV[5]  token ('' for acquire)
-- ARGV[6]  now, unix ms
-- ARGV[7]  ttl of the lease in ms
--
-- Returns
--   acquire  {1, token} taken with this new token; {0, holder, token} held
--            by another; -1 the question is gone
--   renew    1 renewed; 0 lost (expired, or taken again)
--   release  1 given up; 0 not held with this holder and token
local cur = redis.call('HMGET', KEYS[1], 'status', ARGV[2])
local now = tonumber(ARGV[6])
local held, token, holder = false, nil, nil
if cur[2] then
  local u, t, h = string.match(cur[2], '^(%d+):(%d+):(.*)$')
  if u and tonumber(u) > now then
    held, token, holder = true, t, h
  end
end
local op = ARGV[1]
if op == 'acquire' then
  if not cur[1] then
    return -1
  end
  if held and holder ~= ARGV[4] then
    return {0, holder, token}
  end
  local old = redis.call('HMGET', KEYS[2], 'holder', 'token')
  if old[1] and old[1] ~= ARGV[4] then
    return {0, old[1], old[2]}
  end
  local n = redis.call('HINCRBY', KEYS[1], ARGV[3], 1)
  redis.call('HSET', KEYS[1], ARGV[2], (now + tonumber(ARGV[7])) .. ':' .. n .. ':' .. ARGV[4])
  return {1, tostring(n)}
end
if not held or holder ~= ARGV[4] or token ~= ARGV[5] then
  return 0
end
if op == 'renew' then
  redis.call('HSET', KEYS[1], ARGV[2], (now + tonumber(ARGV[7])) .. ':' .. token .. ':' .. holder)
else
  redis.call('HDEL', KEYS[1], ARGV[2])
end
return 1
