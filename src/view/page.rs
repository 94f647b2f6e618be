//! The live view's page: static HTML, its stylesheet and its script, and the headers every
//! view response carries.
//!
//! The page has no control that reaches the pane. Its script opens the event stream with the
//! link's token (read from the page's own address) and puts each screen, already escaped by
//! [`super::render`], in a `<pre>`. The approvals panel lists and decides waiting calls through
//! `/approvals` with an approver's token that the person pastes: the view link alone grants no
//! approving. That token stays in the script's memory (never stored, never in an address).
//!
//! The Content Security Policy allows only the gateway's own script and stylesheet (no inline
//! script), style attributes (the renderer's colours), and connections back to the gateway.

use http::HeaderValue;
use http::header::{self, HeaderMap, HeaderName};

/// `/view`'s HTML.
pub(crate) const HTML: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<title>muxgate live view</title>
<link rel="stylesheet" href="view/app.css">
<script src="view/app.js" defer></script>
</head>
<body>
<header><strong>muxgate</strong> live view <span id="status">connecting…</span></header>
<section id="approvals">
<h2>Approvals waiting</h2>
<p>Deciding needs an approver's token (scope <code>mux:approve</code> alone); this link does not grant it.</p>
<label>Approver token <input id="approver-token" type="password" autocomplete="off"></label>
<button id="approvals-load" type="button">Show</button>
<p id="approvals-status"></p>
<ul id="approvals-list"></ul>
</section>
<pre id="screen" aria-live="off"></pre>
</body>
</html>
"#;

/// `/view/app.css`.
pub(crate) const CSS: &str = r#"body { background: #101010; color: #d0d0d0; font-family: sans-serif; margin: 1em; }
header { margin-bottom: .5em; }
#status { color: #8a8a8a; margin-left: 1em; }
#status.ended { color: #ff6060; }
#screen { font-family: "DejaVu Sans Mono", monospace; font-size: 14px; line-height: 1.2;
  background: #101010; color: #d0d0d0; border: 1px solid #404040; padding: 4px;
  display: inline-block; white-space: pre; margin: 0; }
#screen .b { font-weight: bold; }
#screen .d { opacity: .6; }
#screen .i { font-style: italic; }
#screen .u { text-decoration: underline; }
#screen .cur { outline: 1px solid #d0d0d0; background: #d0d0d0; color: #101010; }
#approvals { margin-bottom: 1em; padding-bottom: .5em; border-bottom: 1px solid #404040; }
#approvals h2 { font-size: 1em; margin: .3em 0; }
#approvals p { margin: .3em 0; }
#approvals li { margin: .5em 0; }
#approvals code.args { display: block; white-space: pre-wrap; color: #a0a0a0; }
"#;

/// `/view/app.js`.
pub(crate) const JS: &str = r#""use strict";
(function () {
  const token = new URLSearchParams(window.location.search).get("t") || "";
  const screen = document.getElementById("screen");
  const status = document.getElementById("status");
  const events = new EventSource("view/events?t=" + encodeURIComponent(token));
  events.addEventListener("screen", function (event) {
    // The server escaped every character of the pane: this is markup it made.
    screen.innerHTML = event.data;
    status.textContent = "live";
  });
  events.addEventListener("end", function (event) {
    status.textContent = "ended: " + event.data;
    status.className = "ended";
    events.close();
  });
  events.onerror = function () {
    if (events.readyState === EventSource.CLOSED) {
      status.textContent = "disconnected";
      status.className = "ended";
    }
  };

  let approver = "";
  const list = document.getElementById("approvals-list");
  const note = document.getElementById("approvals-status");
  function authorized(method, path, body) {
    const init = { method: method, headers: { "Authorization": "Bearer " + approver },
                   cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (response) {
      return response.json().then(function (json) {
        if (!response.ok) { throw new Error(json.message || response.statusText); }
        return json;
      });
    });
  }
  function decide(id, decision) {
    authorized("POST", "approvals/" + encodeURIComponent(id), { decision: decision })
      .then(function (answer) { note.textContent = answer.id + " " + answer.decision; refresh(); })
      .catch(function (error) { note.textContent = error.message; });
  }
  function button(label, onclick) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = label;
    b.addEventListener("click", onclick);
    return b;
  }
  function refresh() {
    if (!approver) { return; }
    authorized("GET", "approvals").then(function (answer) {
      list.replaceChildren();
      answer.pending.forEach(function (call) {
        const item = document.createElement("li");
        const what = document.createElement("span");
        what.textContent = call.id + ": " + call.sub + " calls " + call.tool +
          " (rule " + call.rule + ", " + Math.round(call.expires_in_ms / 1000) + " s left) ";
        const args = document.createElement("code");
        args.className = "args";
        args.textContent = JSON.stringify(call.args);
        item.append(what, button("Approve", function () { decide(call.id, "approve"); }),
                    button("Deny", function () { decide(call.id, "deny"); }), args);
        list.append(item);
      });
      if (answer.pending.length === 0) { note.textContent = "none waiting"; }
    }).catch(function (error) { note.textContent = error.message; });
  }
  document.getElementById("approvals-load").addEventListener("click", function () {
    approver = document.getElementById("approver-token").value.trim();
    note.textContent = "";
    refresh();
  });
  window.setInterval(refresh, 2000);
})();
"#;

/// The Content Security Policy of every view response.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src-elem 'self'; \
     style-src-attr 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The headers every view response carries: no framing, no caching, no referrer (the page's
/// address holds the token), and the CSP.
pub(crate) fn security_headers(headers: &mut HeaderMap) {
    let set = |headers: &mut HeaderMap, name: HeaderName, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(headers, header::CONTENT_SECURITY_POLICY, CSP);
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::CACHE_CONTROL, "no-store");
    set(headers, header::REFERRER_POLICY, "no-referrer");
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_no_way_to_send_input_to_the_pane() {
        assert!(!HTML.contains("<form"));
        assert!(!HTML.contains("<textarea"));
        assert_eq!(HTML.matches("<input").count(), 1, "only the approver token");
        assert!(HTML.contains(r#"<input id="approver-token" type="password""#));
        assert!(!JS.contains("localStorage") && !JS.contains("sessionStorage"));
        assert!(!HTML.contains("<script>"), "no inline script");
    }

    /// A gateway behind a path prefix (`http.public_url = "https://host/muxgate"`) serves the
    /// page at `/muxgate/view`: everything it loads must resolve under that prefix.
    #[test]
    fn the_page_reaches_the_gateway_by_relative_paths() {
        for needle in ["href=\"/", "src=\"/", "(\"/", "\"/view", "\"/approvals"] {
            assert!(!HTML.contains(needle), "{needle} in the HTML");
            assert!(!JS.contains(needle), "{needle} in the script");
        }
        assert!(JS.contains("\"view/events?t=\""));
    }

    #[test]
    fn every_response_is_locked_down() {
        let mut headers = HeaderMap::new();
        security_headers(&mut headers);
        assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
        assert_eq!(headers[header::CACHE_CONTROL], "no-store");
        assert!(CSP.contains("script-src 'self'") && !CSP.contains("unsafe-eval"));
    }
}
