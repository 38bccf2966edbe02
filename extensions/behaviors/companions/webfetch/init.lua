-- webfetch: fetch one http(s) URL for the model, through fen's HTTP client (proxies from the
-- environment honoured). HTML becomes Markdown (htmd) or text, with <script> and <style>
-- dropped; bodies over 5 MiB are refused; redirects on the same host are followed, one to
-- another host is reported with its target and not followed (the model decides).
local native = require("fen.native")

local DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S = 30, 120
local MAX_BYTES = 5 * 1024 * 1024
local KEEP_BYTES = 60 * 1024   -- of converted content returned (under the 64 KiB result cap)

local function result(text, is_error, details)
  return { content = { { type = "text", text = text } }, is_error = is_error, details = details }
end

return function(api)
  api.register("tool", {
    name = "webfetch",
    label = "webfetch",
    description = [[Fetch a web page or file over http(s) and return its content: HTML as Markdown (default), plain text or raw HTML (format), other text types as they are. Scripts and styles are dropped. Bodies over 5 MiB are refused; the returned content is cut at 60 KB. Redirects within the same host are followed; a redirect to another host is reported with its target URL and not followed: call webfetch again with that URL if you trust it. timeout_s defaults to 30 (at most 120).]],
    risk = "read",
    concurrency = "parallel_safe",
    parameters = {
      type = "object",
      properties = {
        url = { type = "string", description = "An http:// or https:// URL." },
        format = { type = "string", enum = { "markdown", "text", "html" }, description = "How to return HTML (default markdown)." },
        timeout_s = { type = "number", minimum = 1, maximum = MAX_TIMEOUT_S, description = "Seconds for the whole fetch (default 30)." },
      },
      required = { "url" },
    },
    execute = function(args)
      local url = args.url or ""
      if not url:match("^[hH][tT][tT][pP][sS]?://") then
        return result("error: only http:// and https:// URLs can be fetched", true)
      end
      local timeout = math.max(1, math.min(tonumber(args.timeout_s) or DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S))
      local page, err = native.http.fetch_page({ url = url, format = args.format or "markdown",
        timeout_ms = math.floor(timeout * 1000), max_bytes = MAX_BYTES })
      if not page then return result("error: " .. tostring(err), true, { url = url }) end
      if page.redirect then
        return result(string.format(
          "%s redirects (HTTP %d) to another host: %s\nNot followed. Call webfetch with that URL to fetch it.",
          page.from, page.status, page.redirect), false, { url = url, redirect = page.redirect, status = page.status })
      end
      local content = page.content
      local cut = ""
      if #content > KEEP_BYTES then
        local t = native.truncate.head(content, 1000000000, KEEP_BYTES)
        content = t.text
        cut = string.format("\n\n[fen: content cut at %s of %s]", native.truncate.human_bytes(#content), native.truncate.human_bytes(#page.content))
      end
      local header = string.format("URL: %s\nContent-Type: %s\n\n", page.url, page.content_type ~= "" and page.content_type or "unknown")
      return result(header .. content .. cut, false,
        { url = page.url, status = page.status, content_type = page.content_type, bytes = page.bytes, redirects = page.redirects })
    end,
  })
end
