-- wrk: PATCH /api/projects/{id} with a new name each time, the projects' ids taken in turn from
-- the file IDS_FILE names (one a line). Used by bench/writes.py.
local ids = {}
for line in io.lines(os.getenv("IDS_FILE")) do
  ids[#ids + 1] = line
end
local sent = 0
local headers = {["Content-Type"] = "application/json"}
for name, value in pairs(wrk.headers) do -- the bearer token, from wrk's -H
  headers[name] = value
end

request = function()
  sent = sent + 1
  local id = ids[(sent % #ids) + 1]
  local body = '{"name": "Renamed ' .. sent .. '"}'
  return wrk.format("PATCH", "/api/projects/" .. id, headers, body)
end
