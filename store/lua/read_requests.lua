-- read_requests.lua: hand this consumer up to a count of entries of the
-- requests stream, entries idle past the claim time first, without ever
-- sending the body of an entry over the size limit: such an entry is
-- measured here, inside Redis, and comes back as its size and the first
-- bytes of its ask (or cancel, or answer) value, for the refusal.
--
-- KEYS[1]  requests stream      <prefix>requests
-- ARGV[1]  consumer group
-- ARGV[2]  consumer
-- ARGV[3]  count (≥ 1)
-- ARGV[4]  claim min idle in ms, or -1: no claim scan this call
-- ARGV[5]  claim scan start id (XAUTOCLAIM cursor)
-- ARGV[6]  entry size limit: field names and values together, bytes
-- ARGV[7]  bytes kept of an oversize entry's ask, cancel or answer value
--
-- Returns {next claim cursor ('' when no scan ran), entry, entry, ...}
-- where each entry is {id, size, field, value, ...}: size is the entry's
-- field names and values together in bytes, and the fields are only ask,
-- cancel, answer and revoke (cut to ARGV[7] bytes when size is over ARGV[6]). An entry
-- deleted from the stream while pending comes back as {id, -1}.
local count = tonumber(ARGV[3])
local limit = tonumber(ARGV[6])
local head = tonumber(ARGV[7])
local out = {''}

local function add(id, fields)
  if not fields then
    out[#out + 1] = {id, -1}
    return
  end
  local size = 0
  for i = 1, #fields do
    size = size + #fields[i]
  end
  local e = {id, size}
  for i = 1, #fields, 2 do
    local f = fields[i]
    if f == 'ask' or f == 'cancel' or f == 'answer' or f == 'revoke' then
      local v = fields[i + 1]
      if size > limit then
        v = string.sub(v, 1, head)
      end
      e[#e + 1] = f
      e[#e + 1] = v
    end
  end
  out[#out + 1] = e
end

if tonumber(ARGV[4]) >= 0 then
  local c = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[4], ARGV[5], 'COUNT', count)
  out[1] = c[1]
  for _, m in ipairs(c[2]) do
    add(m[1], m[2])
  end
end
local left = count - (#out - 1)
if left > 0 then
  local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', left, 'STREAMS', KEYS[1], '>')
  if r then
    for _, m in ipairs(r[1][2]) do
      add(m[1], m[2])
    end
  end
end
return out
