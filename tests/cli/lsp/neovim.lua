-- End to end with Neovim's built-in LSP client (0.7 or later; tests/cli/lsp.rs runs it
-- headless). CG_SPEC names a JSON file:
--
--   { "bin": computeguard, "args": [...after `lsp`],
--     "open": [files],                      -- each opened in a buffer, its diagnostics read
--     "config": computeguard.yaml or null,  -- a file that should get a diagnostic too
--     "hover": { "file": f, "word": w },    -- hover on the first occurrence of w in f
--     "action": { "file": f, "rule": r, "title": prefix },
--                                           -- the code action on r's diagnostic whose title
--                                           -- starts with prefix, applied and written
--     "out": where the answers go }
--
-- One client serves every buffer (as `vim.lsp.start` does on 0.8+). What is written to
-- "out" is what Neovim holds after its own handler ran (`vim.diagnostic.get`), in the
-- LSP's shape (0-based line), per file: { "files": {file: [diagnostic]}, "config": [...],
-- "hover": markdown, "action": title }. Exit 3 when something did not come.
local spec = vim.fn.json_decode(table.concat(vim.fn.readfile(os.getenv("CG_SPEC")), "\n"))

local function fail(msg)
  io.stderr:write("neovim.lua: " .. msg .. "\n")
  vim.cmd("cquit 3")
end

vim.o.hidden = true
local published = {}
local client_id = vim.lsp.start_client({
  name = "computeguard",
  cmd = vim.list_extend({ spec.bin, "lsp" }, spec.args or {}),
  root_dir = vim.fn.getcwd(),
  init_options = { debounceMs = 50 },
  handlers = {
    ["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
      vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
      if result then
        published[result.uri] = true
      end
    end,
  },
})
if not client_id then
  fail("the client did not start")
end

-- Opens `file` in a buffer attached to the client and waits for its diagnostics (and for
-- those of `also`, a file that is not open, when given).
local function open(file, also)
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(buf)
  published[uri] = nil
  if also then
    published[vim.uri_from_fname(also)] = nil
  end
  vim.lsp.buf_attach_client(buf, client_id)
  local ok = vim.wait(120000, function()
    return published[uri] and (not also or published[vim.uri_from_fname(also)])
  end, 20)
  if not ok then
    fail("no diagnostics for " .. file .. " within 2 minutes")
  end
  return buf, uri
end

-- What Neovim shows on `buf`, in the LSP's shape.
local function shown(buf)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(out, {
      code = d.code,
      severity = d.severity,
      message = d.message,
      source = d.source,
      range = { start = { line = d.lnum, character = d.col } },
    })
  end
  return out
end

local result = { files = vim.empty_dict() }
local bufs = {}
for _, file in ipairs(spec.open) do
  local also = nil
  if spec.config and vim.fn.fnamemodify(spec.config, ":h") == vim.fn.fnamemodify(file, ":h") then
    also = spec.config
  end
  bufs[file] = open(file, also)
  result.files[file] = shown(bufs[file])
end
if spec.config then
  result.config = shown(vim.uri_to_bufnr(vim.uri_from_fname(spec.config)))
end
local client = vim.lsp.get_client_by_id(client_id)

if spec.hover then
  local buf = bufs[spec.hover.file] or open(spec.hover.file)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local col = line:find(spec.hover.word, 1, true)
    if col then
      local r = client.request_sync("textDocument/hover", {
        textDocument = { uri = vim.uri_from_bufnr(buf) },
        position = { line = i - 1, character = col },
      }, 60000, buf)
      if r and r.result then
        result.hover = r.result.contents.value
      end
      break
    end
  end
end

if spec.action then
  local buf = bufs[spec.action.file] or open(spec.action.file)
  local uri = vim.uri_from_bufnr(buf)
  local target = nil
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.code == spec.action.rule then
      -- As `vim.lsp.buf.code_action()` sends them: the line's diagnostics, in LSP shape.
      for _, l in ipairs(vim.lsp.diagnostic.get_line_diagnostics(buf, d.lnum)) do
        if l.code == spec.action.rule then
          target = l
        end
      end
    end
  end
  if not target then
    fail("no diagnostic of " .. spec.action.rule)
  end
  local r = client.request_sync("textDocument/codeAction", {
    textDocument = { uri = uri },
    range = target.range,
    context = { diagnostics = { target } },
  }, 120000, buf)
  local action = nil
  for _, a in ipairs((r and r.result) or {}) do
    if a.title:sub(1, #spec.action.title) == spec.action.title then
      action = a
      break
    end
  end
  if not action then
    fail("no code action starting with " .. spec.action.title)
  end
  vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding or "utf-16")
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("write")
  end)
  result.action = action.title
end

vim.fn.writefile({ vim.fn.json_encode(result) }, spec.out)
client.stop()
vim.cmd("qall!")
