-- acknowledge.lua: record that someone has seen an open question
-- (ask-user.md §5), once: the first acknowledgement wins.
--
-- KEYS[1]  question hash        <prefix>question:{<id>}
-- ARGV[1]  the Person JSON of who acknowledged
--
-- Returns
--   {1, {HGETALL...}}   acknowledged now; the hash as it now stands
--   {0, {HGETALL...}}   already acknowledged, or no longer pending:
--                       nothing changed
--   {-1}                missing: no such question
local all = redis.call('HGETALL', KEYS[1])
if #all == 0 then
  return {-1}
end
local status, acked
for i = 1, #all, 2 do
  if all[i] == 'status' then status = all[i + 1] end
  if all[i] == 'acked' then acked = all[i + 1] end
end
if status ~= 'pending' or acked then
  return {0, all}
end
redis.call('HSET', KEYS[1], 'acked', ARGV[1])
all[#all + 1] = 'acked'
all[#all + 1] = ARGV[1]
return {1, all}
