-- End to end with Neovim's built-in LSP client (tests/cli/lsp.rs runs it headless):
-- start `computeguard lsp`, open a manifest, wait for its diagnostics, hover on a size,
-- apply the code action whose title starts with CG_ACTION, write the buffer and the
-- diagnostics (as JSON) to CG_OUT, then quit. Exit 3 when something did not come.
local bin = os.getenv("CG_BIN")
local file = os.getenv("CG_FILE")
local out = os.getenv("CG_OUT")
local want_rule = os.getenv("CG_RULE")
local want_action = os.getenv("CG_ACTION")
local hover_word = os.getenv("CG_HOVER")

local function fail(msg)
  io.stderr:write("neovim.lua: " .. msg .. "\n")
  vim.cmd("cquit 3")
end

vim.cmd("edit " .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
local uri = vim.uri_from_bufnr(buf)
local got = nil
local client_id = vim.lsp.start_client({
  name = "computeguard",
  cmd = { bin, "lsp", "--as-of", "2026-11-22" },
  root_dir = vim.fn.fnamemodify(file, ":h"),
  init_options = { debounceMs = 50 },
  handlers = {
    ["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
      if result and result.uri == uri then
        got = result.diagnostics
      end
      return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
    end,
  },
})
if not client_id then
  fail("the client did not start")
end
vim.lsp.buf_attach_client(buf, client_id)
if not vim.wait(120000, function() return got ~= nil end, 20) then
  fail("no diagnostics within 2 minutes")
end
local client = vim.lsp.get_client_by_id(client_id)

-- Hover on the first occurrence of CG_HOVER.
local hover = vim.NIL
for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
  local col = line:find(hover_word, 1, true)
  if col then
    local r = client.request_sync("textDocument/hover", {
      textDocument = { uri = uri },
      position = { line = i - 1, character = col },
    }, 60000, buf)
    if r and r.result then
      hover = r.result.contents.value
    end
    break
  end
end

-- The code action on the diagnostic of CG_RULE.
local target = nil
for _, d in ipairs(got) do
  if d.code == want_rule then
    target = d
  end
end
if not target then
  fail("no diagnostic of " .. want_rule)
end
local r = client.request_sync("textDocument/codeAction", {
  textDocument = { uri = uri },
  range = target.range,
  context = { diagnostics = { target } },
}, 120000, buf)
local action = nil
for _, a in ipairs((r and r.result) or {}) do
  if a.title:sub(1, #want_action) == want_action then
    action = a
    break
  end
end
if not action then
  fail("no code action starting with " .. want_action)
end
vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding or "utf-16")
vim.cmd("write")

vim.fn.writefile({ vim.fn.json_encode({ diagnostics = got, action = action.title, hover = hover }) }, out)
client.stop()
vim.cmd("qall!")
