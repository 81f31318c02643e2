from html.parser import HTMLParser

import pytest

import ember.logs
from ember.logs import get_artifact_logger, trace_event
from ember.logs.report import write_report


class Page(HTMLParser):
    """Collects what a reader of the report sees: summary rows, groups, events and payloads."""

    def __init__(self):
        super().__init__()
        self.stack = []
        self.summary = {}
        self.groups = {}  # (process section id, event key) -> number of rows
        self.payloads = {}  # field -> text in its <pre>
        self.text = []
        self._row = None
        self._section = None
        self._group = None
        self._payload = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.stack.append(tag)
        if tag == "tr" and "data-event" in attrs:
            self._row = [attrs["data-event"]]
        if tag == "section":
            self._section = attrs["id"]
        if tag == "details" and attrs.get("class") == "group":
            self._group = (self._section, attrs["data-event"])
            self.groups[self._group] = 0
        if tag == "tr" and attrs.get("class") == "event":
            self.groups[self._group] += 1
        if tag == "details" and attrs.get("class") == "payload":
            self._payload = attrs["data-field"]
        if tag == "pre" and self._payload:
            self.payloads[self._payload] = ""

    def handle_endtag(self, tag):
        self.stack.pop()
        if tag == "tr" and self._row is not None:
            self.summary[self._row[0]] = [int(x) for x in self._row[2:]]
            self._row = None
        if tag == "details":
            self._payload = None

    def handle_data(self, data):
        self.text.append(data)
        if self._row is not None and self.stack[-1] == "td":
            self._row.append(data)
        if self._payload and self.stack[-1] == "pre":
            self.payloads[self._payload] += data


def parse_page(path):
    page = Page()
    page.feed(path.read_text())
    return page


def test_report_lists_grouped_events_with_payloads(tmp_path):
    ember.logs.set_trace_dir(tmp_path)
    code = "def forward(x):\n    return x < 1 and '&'\n" * 60
    trace_event("compile_start", frame="f")
    trace_event("compile_start", frame="g")
    trace_event("graph", code=code)
    get_artifact_logger("ember.dynamo.x", "guards").debug("L['x'].size(0) == 3")
    ember.logs.set_trace_dir(None)
    with (next(tmp_path.glob("*.jsonl"))).open("a") as f:
        f.write('{"event": "cut short", "ts": \n')

    out = write_report(tmp_path)
    assert out == tmp_path / "index.html"
    page = parse_page(out)
    assert page.summary == {"artifact:guards": [1, 1], "compile_start": [2, 2], "graph": [1, 1]}
    assert page.groups == {
        ("process-0", "artifact:guards"): 1,
        ("process-0", "compile_start"): 2,
        ("process-0", "graph"): 1,
    }
    assert page.payloads["code"] == code
    text = "".join(page.text)
    assert "L['x'].size(0) == 3" in text
    assert "1 lines could not be read" in text
    assert "4 events from 1 processes" in text


def test_report_with_several_processes_and_explicit_out(tmp_path):
    trace_dir = tmp_path / "trace"
    for rank in (0, 1):
        ember.logs.set_rank(rank)
        ember.logs.set_trace_dir(trace_dir)
        for _ in range(rank + 1):
            trace_event("step")
    ember.logs.set_trace_dir(None)
    out = write_report(trace_dir, tmp_path / "page.html")
    page = parse_page(out)
    assert page.summary == {"step": [1, 2, 3]}
    assert {key for key in page.groups} == {("process-0", "step"), ("process-1", "step")}


def test_missing_payload_file_is_reported_not_fatal(tmp_path):
    ember.logs.set_trace_dir(tmp_path)
    trace_event("graph", code="x" * 5000)
    ember.logs.set_trace_dir(None)
    for payload in (tmp_path / "payloads").iterdir():
        payload.unlink()
    assert "is missing" in "".join(parse_page(write_report(tmp_path)).text)


def test_report_of_missing_directory_raises(tmp_path):
    with pytest.raises(FileNotFoundError, match="no trace directory"):
        write_report(tmp_path / "absent")
