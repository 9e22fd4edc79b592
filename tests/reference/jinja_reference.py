#!/usr/bin/env python3
"""Renders Jinja templates the way transformers' apply_chat_template does, as the independent reference
for tunebench's interpreter (tests/core/test_jinja.cpp, test_chat_templates.cpp).

The environment is built here as transformers builds it: jinja2's ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, the loopcontrols extension, a {% generation %} tag (transformers' extension;
here it only renders its body), transformers' tojson filter (json.dumps with ensure_ascii=False, no HTML
escaping) and the globals raise_exception(message) and strftime_now(format).

Usage: jinja_reference.py CASES.json OUT.json
CASES.json is a list of cases, each with "template" (the text) or "template_file" (a path), and either
"context" (the render variables) or "chat" ({messages, tools, documents, add_generation_prompt, extra}:
the context apply_chat_template builds, tools and documents None when absent, extra holding the special
tokens and other template kwargs). OUT.json gets one entry per case: {"output": text} or
{"error": message, "type": exception class, "line": template line or null}.
"""
import json
import sys
import traceback
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(Extension):
    """{% generation %}...{% endgeneration %}: renders its body, as a call block (a scope of its own)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def make_environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def template_line(error):
    """The template line an error was raised at: jinja2 maps template frames back to '<template>' lines."""
    line = getattr(error, "lineno", None)
    if line is not None:
        return line
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if frame.filename == "<template>":
            return frame.lineno
    return None


def render_case(env, case):
    if "template" in case:
        source = case["template"]
    else:
        with open(case["template_file"], encoding="utf-8") as f:
            source = f.read()
    try:
        template = env.from_string(source)
        if "chat" in case:
            chat = case["chat"]
            output = template.render(
                messages=chat.get("messages", []),
                tools=chat.get("tools"),
                documents=chat.get("documents"),
                add_generation_prompt=chat.get("add_generation_prompt", False),
                **chat.get("extra", {}),
            )
        else:
            output = template.render(**case.get("context", {}))
        return {"output": output}
    except Exception as e:  # every failure is a result to compare
        return {"error": str(e), "type": type(e).__name__, "line": template_line(e)}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    env = make_environment()
    results = [render_case(env, case) for case in cases]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
