"""QR codes a projector can show: the link box's link (the QR button next to it) and the page's
own address (#room-qr, shown in presenter mode), drawn on the server as SVG by segno; and the
start-up banner's QR of the address students type (app.py), drawn in the terminal.

    link_qr("http://10.0.0.5:7860/?nsp&a=...")   # an overlay: the QR, the link under it
    room_qr("http://10.0.0.5:7860/")              # the page's address (the browser sends it)
    terminal_qr("http://10.0.0.5:7860/")          # unicode half blocks, for a terminal

Every text shown beside a QR is escaped; what is not an http(s) address gets a line saying so,
never a QR of it.
"""

from __future__ import annotations

import html
import io
from urllib.parse import urlsplit

import segno

MAX_QR_LINK = 1_000  # characters a link may have for its QR (a longer one is not scannable off a wall)
MAX_ADDRESS = 2_000  # characters of the page's address the room QR accepts


def is_address(text) -> bool:
    """An http(s) address without spaces: what a QR may be drawn for."""
    return isinstance(text, str) and text.startswith(("http://", "https://")) and not any(c.isspace() for c in text)


LOOPBACK = ("localhost", "127.", "[::1]", "0.0.0.0")


def this_computer_only(address: str) -> bool:
    """True for an address only this computer can open (localhost, 127.x, ::1): a phone cannot."""
    host = urlsplit(address).netloc.rsplit("@", 1)[-1].lower() if is_address(address) else ""
    return host.startswith(LOOPBACK)


def local_note(address: str, short: bool = False) -> str:
    """Under a QR code of an address only this computer opens: a line saying so and how to start
    the app for a class ('' for any other address); `short`: in few words, for a card beside a QR."""
    if not this_computer_only(address):
        return ""
    if short:  # on the line of the address it is about
        return (
            ' <span class="bl-qr-local-short" role="note">This computer only'
            '<span class="bl-qr-local-fix">: start with --host 0.0.0.0</span></span>'
        )
    return (
        '<p class="bl-qr-local" role="note"><b>This computer only:</b> a phone cannot open this address. '
        "For a class, start the app with <code>--host 0.0.0.0</code> and open it by this computer&#39;s "
        "network address.</p>"
    )


def svg(text: str) -> str:
    """The QR code of `text` as an inline SVG, sized by its CSS (black on white, a quiet zone of
    four modules, error correction M or better); '' where the text is more than a QR code holds."""
    try:
        code = segno.make(text, error="m", micro=False)
    except segno.DataOverflowError:
        return ""
    return code.svg_inline(  # role=img: a picture named by its <title>
        scale=1, border=4, dark="#000", light="#fff", omitsize=True, title=f"QR code of {text}"
    )


def link_qr(link) -> str:
    """The link box's link as a large QR in an overlay (a click or Escape closes it), the link
    written under it; a line saying why where there is no link to draw."""
    if not is_address(link):
        return notice("Make a link first (the button on the left), then show its QR code.")
    drawn = svg(link) if len(link) <= MAX_QR_LINK else ""
    if not drawn:
        return notice(
            f"This link is {len(link):,} characters long: too long for a QR code a class can scan "
            f"(at most {MAX_QR_LINK:,}). Shorten the tab's text, or copy the link instead."
        )
    return (
        '<div class="bl-qr-overlay" role="dialog" aria-modal="true" aria-label="QR code of the link" '
        f'title="click to close"><div class="bl-qr-card">{drawn}<p class="bl-qr-text">{html.escape(link)}</p>'
        f"{local_note(link)}"
        '<p class="bl-qr-hint">scan it with a phone&#39;s camera &middot; click or press Esc to close</p>'
        '<button type="button" class="bl-qr-close">Close</button></div></div>'
    )


def notice(text: str) -> str:
    return f'<p class="bl-qr-notice">{html.escape(text)}</p>'


def room_qr(address: str) -> str:
    """The page's own address (the browser's location.origin + location.pathname: right behind
    a proxy too) as a QR with the address under it, for the projected page (#room-qr)."""
    address = address if isinstance(address, str) else ""
    drawn = svg(address) if is_address(address) and len(address) <= MAX_ADDRESS else ""
    if not drawn:
        return ""
    shown = html.escape(address)
    # open when presenter mode first shows it (the room scans it); one click folds it to a line
    return (
        f'<details class="bl-room" open><summary>Join this page: <span class="bl-room-address">{shown}</span>'
        f'</summary><div class="bl-room-card">{drawn}<p class="bl-qr-text">{shown}</p>{local_note(address)}</div>'
        "</details>"
    )


def terminal_qr(address: str) -> str:
    """The QR code of `address` in unicode half blocks (two rows of modules a line), for a
    terminal with light text on a dark background, the usual one."""
    out = io.StringIO()
    segno.make(address, error="m", micro=False).terminal(out=out, compact=True, border=2)
    return out.getvalue()


# The overlay is a modal dialog: it takes the focus (its Close button) and keeps it (Tab stays on
# it); a click, Close or Escape closes it (its HTML is replaced by nothing) and gives the focus
# back to the QR button.
CLOSE_QR_JS = """
const closer = () => element.querySelector('.bl-qr-close');
const close = () => {
  if (!props.value) return;
  props.value = '';
  document.getElementById('share-qr-button')?.focus();
};
element.addEventListener('click', close);
document.addEventListener('keydown', (e) => {
  if (!props.value || !closer()) return;
  if (e.key === 'Escape') close();
  else if (e.key === 'Tab') { e.preventDefault(); closer().focus({preventScroll: true}); }
});
new MutationObserver(() => {
  if (closer() && !element.contains(document.activeElement)) closer().focus({preventScroll: true});
}).observe(element, {childList: true, subtree: true});
"""
# the room QR asks the server for its SVG the first time presenter mode shows it (body.bl-presenter),
# not when the page opens: a page opened by a student sends no request for it
ROOM_QR_JS = """
let asked = false;
const draw = () => {
  if (asked || !document.body.classList.contains('bl-presenter')) return;
  asked = true;
  server.room_qr(window.location.origin + window.location.pathname).then((svg) => { props.value = svg; });
};
new MutationObserver(draw).observe(document.body, {attributes: true, attributeFilter: ['class']});
draw();
"""

# Gradio repeats each rule under `.gradio-container ... .contain`, where body never is: the rule
# hiding #room-qr is :where() (no weight), so presenter mode's body rule, an id's weight, shows it
QR_CSS = """
:where(#room-qr) {display:none}
#share-row {align-items:center}
#share-row button {white-space:nowrap}
#share-link input {font-family:var(--font-mono); font-size:var(--text-sm)}
#share-qr:not(:has(.bl-qr-overlay, .bl-qr-notice)) {display:none}
.bl-qr-overlay {position:fixed; inset:0; z-index:1000; display:flex; align-items:center; justify-content:center;
  background:rgba(0,0,0,.65); cursor:pointer}
.bl-qr-card, .bl-room-card {background:#fff; color:#111; border-radius:12px; padding:16px; text-align:center}
.bl-qr-card {max-width:94vw}
/* room for the link, a note and Close */
.bl-qr-card svg {display:block; width:min(56vh, 86vw); height:auto; margin:0 auto}
.bl-qr-text {margin:8px 0 0; font:600 clamp(14px, 2vw, 26px)/1.3 var(--font-mono); word-break:break-all; color:#111}
.bl-qr-hint {margin:4px 0 0; font-size:14px; color:#444}
.bl-qr-local {margin:6px auto 0; max-width:36em; padding:4px 8px; border-left:4px solid #b45309; background:#fef3c7;
  color:#111; font-size:15px; text-align:left}
.bl-qr-local * {color:#111 !important}
.bl-qr-local-short {font-size:0.8em; font-weight:600; background:#fef3c7; padding:0 4px}
.bl-qr-local-short, .bl-qr-local-short * {color:#92400e !important}  /* the dark theme's text colour: not on amber */
body.bl-presenter .bl-join .bl-qr-local-fix {display:none}  /* a wall: the warning only, on the address's line */
.bl-qr-close {margin-top:8px; padding:4px 16px; border:1px solid #444; border-radius:6px; background:#fff; color:#111}
.bl-qr-notice {margin:0; color:var(--body-text-color-subdued)}
body.bl-presenter #room-qr {display:block}
#room-qr .bl-room-card {display:inline-block}
#room-qr summary {cursor:pointer; font-weight:600}
.bl-room-address {font-family:var(--font-mono)}
#room-qr svg {display:block; width:min(40vh, 320px); height:auto}
"""
