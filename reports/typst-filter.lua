-- selfmodel PDF filter (pandoc Lua filter, Typst output), used by analysis.render with page.typst.
--
-- * Every table unit (a `.quarto-table` div: caption and table; or a table on its own) is
--   wrapped in `#sm-table(k, top: ...)[...]`, k counting units in document order from 1, so
--   the template can report one that is too wide and put it on a landscape page when asked.
--   `top` is false inside a container (a div with an id becomes a Typst block), where no page
--   can start.
-- * A `.table-caption` div becomes a block that stays on the page of the table below it; so
--   does a paragraph that ends with a colon before a list or a table (the lead-in of a list).
-- * `::: {.running-header}` and `::: {.running-footer}` divs become metadata the page header
--   and footer show on every page (their text, without markup).
-- * A paragraph or table cell that starts with `=` (or with `-`, `+`, `/` and a space) starts
--   with that character escaped: Typst markup would read it as a heading or a list item
--   (`[== 0]` in a cell is a level-2 heading "0").

local unit = 0

local function typst_string(s)
  s = s:gsub("\\", "\\\\"):gsub('"', '\\"'):gsub("[%c]", " ")
  return '"' .. s .. '"'
end

local function raw(text)
  return pandoc.RawBlock("typst", text)
end

local wrap

local function table_unit(block, top)
  unit = unit + 1
  if block.t == "Div" then
    block.content = wrap(block.content, false, true)
  end
  return {
    raw(string.format("#sm-table(%d, top: %s)[", unit, top and "true" or "false")),
    block,
    raw("]"),
  }
end

local function introduces(b, nxt)
  -- a paragraph ending with a colon right before a list or a table ("**Where they differ:**")
  if b.t ~= "Para" or nxt == nil then return false end
  local text = pandoc.utils.stringify(b)
  if text:sub(-1) ~= ":" then return false end
  return nxt.t == "BulletList" or nxt.t == "OrderedList" or nxt.t == "Table"
    or (nxt.t == "Div" and nxt.classes:includes("quarto-table"))
end

wrap = function(blocks, top, in_unit)
  local out = pandoc.List()
  for i, b in ipairs(blocks) do
    if introduces(b, blocks[i + 1]) then
      out:insert(raw("#block(sticky: true, width: 100%)["))
      out:insert(b)
      out:insert(raw("]"))
    elseif b.t == "Div" and (b.classes:includes("running-header") or b.classes:includes("running-footer")) then
      local key = b.classes:includes("running-header") and "running-header" or "running-footer"
      out:insert(raw("#metadata(" .. typst_string(pandoc.utils.stringify(b)) .. ") <" .. key .. ">"))
    elseif b.t == "Div" and b.classes:includes("table-caption") then
      out:insert(raw("#block(sticky: true, width: 100%)["))
      out:extend(b.content)
      out:insert(raw("]"))
    elseif not in_unit and (b.t == "Table" or (b.t == "Div" and b.classes:includes("quarto-table"))) then
      out:extend(table_unit(b, top))
    elseif b.t == "Div" then
      b.content = wrap(b.content, top and b.identifier == "", in_unit)
      out:insert(b)
    elseif b.t == "BlockQuote" then
      b.content = wrap(b.content, false, in_unit)
      out:insert(b)
    else
      out:insert(b)
    end
  end
  return out
end

local function escape_start(el)
  local first = el.content[1]
  if first and first.t == "Str" then
    local c = first.text:sub(1, 1)
    local rest = first.text:sub(2)
    if c == "=" or ((c == "-" or c == "+" or c == "/") and rest == "") then
      el.content[1] = pandoc.RawInline("typst", "\\" .. c)
      if rest ~= "" then el.content:insert(2, pandoc.Str(rest)) end
    end
  end
  return el
end

Para = escape_start
Plain = escape_start

function Pandoc(doc)
  doc.blocks = wrap(doc.blocks, true, false)
  return doc
end
