"""One emulated browser session over Streamlit's own websocket protocol (checked against Streamlit 1.67,
its Starlette server). No browser: protobufs straight over ws://HOST:PORT/_stcore/stream, so a load bench can run
30 students without 30 browsers on the server's cores. Shared by bench/class_load.py and the serve-class test.

    c = StClient(8765, "decode", "lang=en")
    await c.open()                      # initial run, like a page load
    secs = await c.click("dec_next")    # rerun with the button's trigger set; seconds until script_finished
    c.metrics()                         # {"Step": "1", ...}
    await c.close()

Protocol, as the frontend (static/js/index.*.js) and the server (web/server/starlette/starlette_websocket.py,
runtime/app_session.py) do it:
- GET /_stcore/health sets the `_streamlit_xsrf` cookie; the socket is opened with the cookie, an Origin header and
  Sec-WebSocket-Protocol "streamlit, <xsrf cookie value>[, <last session id>]". The server accepts even without a
  valid token (it only gates reading the st.login cookie), but we replicate the browser.
- Every message is a binary protobuf: BackMsg up, ForwardMsg down.
- A run is BackMsg.rerun_script = ClientState{query_string, widget_states, page_script_hash | page_name (first
  load: the url path, hash empty), fragment_id, context_info, cached_message_hashes}. We report no cached hashes,
  so no ForwardMsg ever arrives as a ref_hash reference.
- Each run starts with ForwardMsg.new_session (metadata.run.script_run_id) and ends with script_finished
  (FINISHED_EARLY_FOR_RERUN means another run follows, e.g. after st.rerun()).
"""

from __future__ import annotations

import asyncio
import http.client
import time
from dataclasses import dataclass

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect  # Streamlit's own dependency (its server is Starlette's)

DONE = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY,
        ForwardMsg.FINISHED_WITH_COMPILE_ERROR}
TRIGGERS = {"button", "download_button"}  # trigger_value widgets: sent only in the rerun of their click


@dataclass
class Elem:
    kind: str  # Element oneof name ("button", "metric", ...) or "block"
    proto: object  # the element's own proto (Button, Metric, ...)
    widget_id: str  # "" when not a widget
    fragment_id: str  # Delta.fragment_id: set for elements drawn inside an st.fragment
    run_id: str  # the script run that last wrote it (to drop stale elements when a run ends)


def user_key(widget_id: str) -> str | None:
    """Widget ids are "$$ID-<hash>-<user key>" ("-None" without a key): runtime/state/common.py."""
    key = widget_id.split("-", maxsplit=2)[-1] if widget_id.startswith("$$ID-") else None
    return None if key == "None" else key


def widget_value(kind: str, p, old: WidgetState | None) -> WidgetState | None:
    """The value the frontend holds for a widget just drawn: the server's value when it pushes one (set_value),
    else the value the browser already had, else the proto's default. None: send nothing (server keeps its own)."""
    if kind in TRIGGERS or not getattr(p, "id", ""):
        return None
    if old is not None and not getattr(p, "set_value", False):
        return old
    ws, sv = WidgetState(id=p.id), getattr(p, "set_value", False)
    if kind == "checkbox":  # st.checkbox and st.toggle
        ws.bool_value = p.value if sv else p.default
    elif kind in ("radio", "selectbox"):  # formatted option strings
        if sv and p.HasField("raw_value"):
            ws.string_value = p.raw_value
        elif not sv and p.HasField("default") and p.default < len(p.options):
            ws.string_value = p.options[p.default]
        else:
            return None
    elif kind == "slider" and p.options:  # st.select_slider: options' strings, default = indexes
        ws.string_array_value.data[:] = list(p.raw_value) if sv else [p.options[int(i)] for i in p.default]
    elif kind == "slider":
        ws.double_array_value.data[:] = list(p.value if sv else p.default)
    elif kind == "button_group":  # st.pills / st.segmented_control: the options' labels
        ws.string_array_value.data[:] = list(p.raw_values) if sv else [p.options[i].content for i in p.default]
    elif kind == "multiselect":
        ws.string_array_value.data[:] = list(p.raw_values) if sv else [p.options[i] for i in p.default]
    elif kind in ("text_input", "text_area"):
        field = "value" if sv else "default"
        if not p.HasField(field):
            return None
        ws.string_value = getattr(p, field)
    elif kind == "number_input":
        field = "value" if sv else "default"
        if not p.HasField(field):
            return None
        if p.data_type == type(p).INT:
            ws.int_value = int(getattr(p, field))
        else:
            ws.double_value = getattr(p, field)
    else:  # charts with selections, pickers, uploaders...: left out, the server keeps their last value
        return None
    return ws


class StClient:
    def __init__(self, port: int, page: str = "", query_string: str = "", host: str = "127.0.0.1",
                 source: str | None = None):
        self.base = f"{host}:{port}"
        self.host, self.port = host, port
        self.source = source  # the address this client connects from (another of 127.0.0.0/8: another client)
        self.cookies: dict[str, str] = {}  # what the server (or a balancer in front of it) set: sent back
        self.page_name, self.page_hash, self.query_string = page, "", query_string
        self.elements: dict[tuple[int, ...], Elem] = {}  # delta_path -> element
        self.widgets: dict[str, WidgetState] = {}  # widget id -> the value we send with every rerun
        self.session_id = ""
        self.run_id = ""
        self.navigation = False  # True once the app sent a Navigation message (st.navigation)
        self.page_infos: list[str] = []  # every page_info_changed query string the server sent
        self.pages: dict[str, str] = {}  # url path -> page script hash, from the app's navigation
        self.ws = None

    # -- connection ------------------------------------------------------------------------------------------
    async def connect(self) -> None:
        def health() -> None:  # the browser pings /_stcore/health first; that answer sets the XSRF cookie (and a
            # balancer's affinity cookie, which then keeps this session on one replica)
            conn = http.client.HTTPConnection(self.host, self.port, timeout=30,
                                              source_address=(self.source, 0) if self.source else None)
            try:
                conn.request("GET", "/_stcore/health")
                r = conn.getresponse()
                r.read()
                if r.status != 200:
                    raise ConnectionError(f"the health check answered {r.status}")
                for header in r.headers.get_all("Set-Cookie") or []:
                    name, _, rest = header.partition("=")
                    self.cookies[name.strip()] = rest.split(";")[0]
            finally:
                conn.close()

        await asyncio.to_thread(health)
        xsrf = self.cookies.get("_streamlit_xsrf", "")
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.ws = await connect(
            f"ws://{self.base}/_stcore/stream",
            subprotocols=["streamlit", xsrf or "PLACEHOLDER_AUTH_TOKEN"],
            additional_headers={"Origin": f"http://{self.base}", **({"Cookie": cookie} if cookie else {})},
            max_size=None,  # a plotly figure can exceed websockets' 1 MiB default
            compression=None,  # Streamlit's messages are protobuf; the browser negotiates deflate, not needed here
            **({"local_addr": (self.source, 0)} if self.source else {}),
        )

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    # -- runs ----------------------------------------------------------------------------------------------
    async def open(self) -> float:
        """Connect and do the page load's run."""
        await self.connect()
        return await self._rerun([], "")

    async def click(self, key: str) -> float:
        """Press the button whose user key is `key`; seconds from sending until its run finished."""
        found = [e for e in self.elements.values() if e.kind in TRIGGERS and user_key(e.widget_id) == key]
        if not found:
            raise KeyError(f"no button with key {key!r}; buttons: {self.buttons()}")
        button = found[0]
        if getattr(button.proto, "disabled", False):
            raise RuntimeError(f"button {key!r} is disabled")
        return await self._rerun([WidgetState(id=button.widget_id, trigger_value=True)], button.fragment_id)

    async def set(self, key: str, value) -> float:
        """Set the widget whose user key is `key` as a person does (a slider to a number, a text box to a text,
        sent when it is left); seconds from sending until its run finished."""
        found = [e for e in self.elements.values() if e.widget_id and user_key(e.widget_id) == key]
        if not found:
            raise KeyError(f"no widget with key {key!r}")
        e = found[0]
        ws = WidgetState(id=e.widget_id)
        if e.kind == "slider":
            ws.double_array_value.data[:] = [float(value)]
        elif e.kind in ("text_input", "text_area"):
            ws.string_value = str(value)
        else:
            raise TypeError(f"setting a {e.kind} is not written here")
        self.widgets[e.widget_id] = ws  # the browser holds it from now on
        return await self._rerun([ws], e.fragment_id)

    async def rerun(self, fragment_id: str = "") -> float:
        """A rerun of the page, or of one fragment (what its run_every timer sends); seconds until it finished."""
        return await self._rerun([], fragment_id)

    def fragments(self) -> set[str]:
        """The ids of the fragments drawn on the page."""
        return {e.fragment_id for e in self.elements.values() if e.fragment_id}

    def texts(self) -> list[str]:
        """Every markdown body on the page (st.markdown, st.caption)."""
        return [e.proto.body for e in self.elements.values() if e.kind == "markdown"]

    def alerts(self) -> list[str]:
        """Every alert's body on the page (st.warning, st.error, st.info, st.success)."""
        return [e.proto.body for e in self.elements.values() if e.kind == "alert"]

    async def goto(self, page: str) -> float:
        """Another page of the app in this session, as a click in the sidebar does (its run is kept)."""
        if page not in self.pages:
            raise KeyError(f"no page {page!r}; pages: {sorted(self.pages)}")
        self.page_hash, self.page_name = self.pages[page], page
        return await self._rerun([], "")

    async def _rerun(self, extra: list[WidgetState], fragment_id: str) -> float:
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query_string
        cs.page_script_hash = self.page_hash
        if not self.page_hash:  # first load: the server resolves the url path (st.navigation url_path)
            cs.page_name = self.page_name
        cs.fragment_id = fragment_id
        cs.is_auto_rerun = False
        ids = {w.id for w in extra}
        cs.widget_states.widgets.extend([w for i, w in self.widgets.items() if i not in ids] + extra)
        ci = cs.context_info  # what the browser reports about itself
        ci.timezone, ci.timezone_offset, ci.locale = "UTC", 0, "en-US"
        ci.url = f"http://{self.base}/{self.page_name}" + (f"?{self.query_string}" if self.query_string else "")
        ci.is_embedded, ci.color_scheme = False, "light"
        # cached_message_hashes left empty: every ForwardMsg comes inline, never by ref_hash
        started = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        await self._read_until_finished()
        return time.perf_counter() - started

    async def _read_until_finished(self, timeout: float = 300) -> None:
        started_own_run = False  # skip a finish left over from a run that began before our request
        async with asyncio.timeout(timeout):
            while True:
                fm = ForwardMsg()
                fm.ParseFromString(await self.ws.recv())
                kind = fm.WhichOneof("type")
                if kind == "new_session":
                    started_own_run = True
                    self.run_id = fm.metadata.run.script_run_id
                    self.session_id = fm.new_session.initialize.session_id or self.session_id
                    if not self.navigation:  # with st.navigation this is the main script's hash, not the page's
                        self.page_hash = fm.new_session.page_script_hash or self.page_hash
                elif kind == "navigation":  # st.navigation: the page this run showed (the frontend's current page)
                    self.navigation = True
                    nav = fm.navigation
                    self.page_hash = nav.page_script_hash
                    self.pages = {p.url_pathname: p.page_script_hash for p in nav.app_pages}
                    self.page_name = next((p.url_pathname for p in nav.app_pages
                                           if p.page_script_hash == nav.page_script_hash), self.page_name)
                elif kind == "delta":
                    self._apply_delta(fm)
                elif kind == "page_info_changed":  # st.query_params changed: the browser's URL follows
                    self.query_string = fm.page_info_changed.query_string
                    self.page_infos.append(self.query_string)
                elif kind == "ref_hash":
                    raise RuntimeError("got a cached-message reference although no hashes were reported")
                elif kind == "script_finished" and started_own_run:
                    if fm.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                        started_own_run = False  # another run (st.rerun) follows
                        continue
                    if fm.script_finished in DONE:
                        self._drop_stale(list(fm.metadata.run.fragment_ids))
                        return

    def _apply_delta(self, fm: ForwardMsg) -> None:
        path, delta = tuple(fm.metadata.delta_path), fm.delta
        if delta.WhichOneof("type") == "add_block":
            self.elements[path] = Elem("block", delta.add_block, "", delta.fragment_id, self.run_id)
            return
        if delta.WhichOneof("type") != "new_element":
            return  # new_transient (spinners, toasts): not part of the tree
        el = delta.new_element
        kind = el.WhichOneof("type")
        proto = getattr(el, kind)
        wid = getattr(proto, "id", "")  # "" for elements without an id field
        self.elements[path] = Elem(kind, proto, wid, delta.fragment_id, self.run_id)
        value = widget_value(kind, proto, self.widgets.get(wid))
        if value is not None:
            self.widgets[wid] = value

    def _drop_stale(self, fragment_ids: list[str]) -> None:
        """At a run's end the frontend removes the elements this run did not write (a fragment run: only inside
        its fragments), and forgets the states of widgets no longer drawn."""
        self.elements = {p: e for p, e in self.elements.items()
                         if e.run_id == self.run_id or (fragment_ids and e.fragment_id not in fragment_ids)}
        live = {e.widget_id for e in self.elements.values() if e.widget_id}
        self.widgets = {i: w for i, w in self.widgets.items() if i in live}

    # -- reading the page ------------------------------------------------------------------------------------
    def metrics(self) -> dict[str, str]:
        """st.metric label -> value, in the page's order."""
        return {e.proto.label: e.proto.body for _, e in sorted(self.elements.items()) if e.kind == "metric"}

    def downloads(self) -> dict[str, str]:
        """user key -> the URL path of a download button's file (served by the replica that holds the session)."""
        return {user_key(e.widget_id) or "": e.proto.url for e in self.elements.values()
                if e.kind == "download_button"}

    def buttons(self) -> dict[str, str]:
        """user key -> fragment id of every keyed button on the page."""
        return {user_key(e.widget_id): e.fragment_id for e in self.elements.values()
                if e.kind in TRIGGERS and user_key(e.widget_id)}
