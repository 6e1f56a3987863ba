#!/usr/bin/env python3
"""scripts/check_style.py - the house rules a reader relies on, checked.

  scripts/check_style.py [--root DIR] [--max-function N] [--max-header N] [--list-functions N]

Rules (docs/architecture.md, "House rules"):
  readme     README.md is under 10 KiB and records no CI runs;
  comments   no code comment line names a date or a machine (a date inside a
             bench/results/ path is a pointer to a record and allowed);
  headers    no file opens with a comment header over --max-header lines (25);
  functions  no function in lib/ or tools/ over --max-function lines (150);
  docs       no heading of docs/*.md (docs/notes/ aside) carries a date;
  links      every relative Markdown link of README.md and docs/ names a file
             that exists (and a heading, for #anchor), and every
             `docs/<page>.md, "<section>"` a comment or doc cites names a heading there.
Prints one line per finding as `rule: file:line: what` and exits 1 if any.
--list-functions N prints every function over N lines, longest first, and exits 0.
"""
import argparse
import os
import re
import sys

CODE_EXT = (".cpp", ".h", ".cc", ".hpp", ".c", ".py", ".sh", ".js", ".cu")
CODE_DIRS = ("lib", "include", "tools", "tests", "bench", "scripts", "examples", "models", ".ci")
HASH_COMMENT_EXT = (".py", ".sh")
MONTHS = r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*"
DATE = re.compile(r"\b20\d\d-[01]\d(-[0-3]\d)?\b|\b" + MONTHS + r" [0-3]?\d(st|nd|rd|th)?\b|\b[0-3]?\d " + MONTHS + r"\b")
MACHINE = re.compile(r"\b(H100|H200|A100|Xeon|EPYC|Zen ?\d|(Intel|AMD|the|this|2-core) VM)\b")
RESULTS_PATH = re.compile(r"bench/results/\S+")
CI_RECORD = re.compile(r"\b\d+/\d+( passed)?\b.*\b\d+m\d\ds\b")


def slug(heading):
    """GitHub's anchor for a heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(path):
    if not os.path.exists(path):
        return []
    return [l.lstrip("#").strip() for l in open(path, encoding="utf-8").read().split("\n") if l.startswith("#")]


SECTION_CITE = re.compile(r"(docs/[\w./-]+\.md),? \"([^\"]+)\"")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


def check_citations(root, rel, text, findings):
    """Citations may run over lines (comment markers between the words are dropped)."""
    lines = [re.sub(r"^\s*(///?|#|\*)?\s?", "", l) for l in text.split("\n")]
    joined, starts = "", []
    for l in lines:
        starts.append(len(joined))
        joined += l.strip() + " "
    for m in SECTION_CITE.finditer(joined):
        doc, section = m.group(1), m.group(2)
        names = headings(os.path.join(root, doc))
        if not any(section.lower() in h.lower() for h in names):
            lineno = max(i for i, s in enumerate(starts) if s <= m.start()) + 1
            findings.append(f"links: {rel}:{lineno}: {doc} has no section \"{section}\"")


def check_md_links(root, rel, text, findings):
    base = os.path.dirname(os.path.join(root, rel))
    for lineno, line in enumerate(text.split("\n"), 1):
        for target in MD_LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(base, path)) if path else os.path.join(root, rel)
            if not os.path.exists(full):
                findings.append(f"links: {rel}:{lineno}: {target}: no such file")
            elif anchor and full.endswith(".md") and anchor not in [slug(h) for h in headings(full)]:
                findings.append(f"links: {rel}:{lineno}: {target}: no such heading")


def code_files(root):
    for top in CODE_DIRS:
        for dirpath, dirnames, files in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if d not in ("node_modules", "__pycache__", "results")]
            for f in sorted(files):
                path = os.path.join(dirpath, f)
                if f.endswith(CODE_EXT) or (os.access(path, os.X_OK) and not f.endswith((".onnx", ".npy"))):
                    yield path


def blank_out(text, start, end):
    return re.sub(r"[^\n]", " ", text[start:end])


def split_code(src, hash_comments):
    """Returns (code, comments): the source with comments blanked, and the
    comments with everything else blanked, line for line."""
    code, comm = [], []
    i, n = 0, len(src)

    def comment_to(j):
        code.append(blank_out(src, i, j))
        comm.append(src[i:j])
        return j

    while i < n:
        line_comment = src[i] == "#" if hash_comments else src.startswith("//", i)
        if line_comment:
            j = src.find("\n", i)
            i = comment_to(n if j < 0 else j)
        elif not hash_comments and src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = comment_to(n if j < 0 else j + 2)
        elif not hash_comments and src.startswith('R"', i) and re.match(r'R"[^(\s]{0,16}\(', src[i:]):
            delim = re.match(r'R"([^(\s]*)\(', src[i:]).group(1)
            j = src.find(")" + delim + '"', i)
            j = n if j < 0 else j + len(delim) + 2
            code.append(src[i] + blank_out(src, i + 1, j))
            comm.append(blank_out(src, i, j))
            i = j
        elif src[i] in "\"'" and not (src[i] == "'" and hash_comments is False and i > 0 and src[i - 1].isalnum()):
            q = src[i]
            j = i + 1
            while j < n and src[j] != q and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            code.append(q + blank_out(src, i + 1, j))
            comm.append(blank_out(src, i, j))
            i = j
        else:
            code.append(src[i])
            comm.append("\n" if src[i] == "\n" else " ")
            i += 1
    return "".join(code), "".join(comm)


def check_comments(path, rel, comments, findings):
    for lineno, line in enumerate(comments.split("\n"), 1):
        text = RESULTS_PATH.sub("", line)
        if DATE.search(text):
            findings.append(f"comments: {rel}:{lineno}: a date in a comment: {line.strip()[:100]}")
        elif MACHINE.search(text):
            findings.append(f"comments: {rel}:{lineno}: a machine in a comment: {line.strip()[:100]}")


def header_length(lines, hash_comments):
    """The comment lines (and blank lines between them) a file opens with."""
    n = 0
    for i, line in enumerate(lines):
        s = line.strip()
        if i == 0 and s.startswith("#!"):
            continue
        if hash_comments:
            is_comment = s.startswith("#")
        else:
            is_comment = s.startswith(("//", "/*", "*"))
        if is_comment:
            n += 1
        elif s == "" and n and i + 1 < len(lines) and lines[i + 1].strip().startswith(("#", "//", "/*", "*")):
            n += 1
        else:
            break
    return n


def python_docstring_length(src):
    m = re.match(r'(#![^\n]*\n)?\s*("""|\'\'\')(.*?)\2', src, re.S)
    return m.group(0).count("\n") + 1 if m else 0


FUNCTION_TAIL = re.compile(
    r"\)\s*(const|noexcept|override|final|mutable|&|&&|\s)*(->\s*[\w:<>,\s\*&]+)?\s*$"
    r"|\)\s*(const|noexcept|\s)*:\s*[^;{}]*$")


def cpp_functions(code):
    """(first line, lines) of each function body at namespace or class scope;
    lambdas and blocks inside a function count as part of it."""
    stack, found, line = [], [], 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            before = code[max(0, i - 400):i]
            if re.search(r"\bnamespace\s*[\w:]*\s*$", before) or re.search(r'extern\s*"\s*"\s*$', before):
                kind = "scope"
            elif re.search(r"\b(class|struct|union|enum)\b[^;{}()]*$", before):
                kind = "scope"
            elif FUNCTION_TAIL.search(before):
                kind = "function"
            else:
                kind = "block"
            at_scope = all(k == "scope" for k, _ in stack)
            stack.append((kind if at_scope else "inner", line))
        elif c == "}" and stack:
            kind, start = stack.pop()
            if kind == "function":
                found.append((start, line - start + 1))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--max-function", type=int, default=150)
    ap.add_argument("--max-header", type=int, default=25)
    ap.add_argument("--list-functions", type=int, metavar="N")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    findings, functions = [], []

    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    if len(readme.encode()) >= 10 * 1024:
        findings.append(f"readme: README.md: {len(readme.encode())} bytes, over 10 KiB")
    for path in [os.path.join(root, "README.md")] + [os.path.join(dp, f) for dp, _, fs in
                                                     os.walk(os.path.join(root, "docs")) for f in fs if f.endswith(".md")]:
        rel = os.path.relpath(path, root)
        text = open(path, encoding="utf-8").read()
        check_md_links(root, rel, text, findings)
        if not rel.startswith("docs/notes/"):
            check_citations(root, rel, text, findings)
        for lineno, line in enumerate(text.split("\n"), 1):
            if CI_RECORD.search(line) and re.search(r"\bCI\b|fresh clone|passed", line):
                findings.append(f"readme: {rel}:{lineno}: a CI run recorded: {line.strip()[:100]}")
            if rel.startswith("docs/") and not rel.startswith("docs/notes/") and line.startswith("#") and DATE.search(line):
                findings.append(f"docs: {rel}:{lineno}: a dated heading: {line.strip()[:100]}")

    for path in code_files(root):
        rel = os.path.relpath(path, root)
        src = open(path, encoding="utf-8", errors="replace").read()
        hash_comments = path.endswith(HASH_COMMENT_EXT) or not path.endswith(CODE_EXT) or rel.startswith(".ci/")
        if path.endswith(".txt"):
            continue
        code, comments = split_code(src, hash_comments)
        check_comments(path, rel, comments, findings)
        check_citations(root, rel, comments, findings)
        header = header_length(src.split("\n"), hash_comments)
        if path.endswith(".py"):
            header = max(header, python_docstring_length(src))
        if header > args.max_header:
            findings.append(f"headers: {rel}:1: a {header}-line file header (at most {args.max_header})")
        if path.endswith((".cpp", ".h", ".cc")) and rel.split(os.sep)[0] in ("lib", "tools"):
            for start, n in cpp_functions(code):
                functions.append((n, rel, start))
                if n > args.max_function:
                    findings.append(f"functions: {rel}:{start}: a {n}-line function (at most {args.max_function})")

    if args.list_functions is not None:
        for n, rel, start in sorted(functions, reverse=True):
            if n > args.list_functions:
                print(f"{n:5d} {rel}:{start}")
        return 0
    for f in findings:
        print(f)
    print(f"check_style: {len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
