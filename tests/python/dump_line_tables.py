# Prints, as JSON, the line tables of code objects compiled by the running interpreter and the
# line of every instruction according to the interpreter itself (co_lines()): the fixture of
# line_table_test.cc, made at test time by each installed CPython.
import json
import sys

SOURCE = '''
def simple(a, b):
    c = a + b
    return c

def branches(x):
    if x > 10:
        y = [i * i
             for i in range(x)]
    elif x < -5:
        y = {"k": x,
             "v": -x}
    else:
        y = None
    try:
        z = 1 / x
    except ZeroDivisionError:
        z = 0
    finally:
        pass
    return y, z

async def coroutine(q):
    await q.get()
    return 1

def generator(n):
    for i in range(n):
        yield i
''' + "\n" * 300 + '''
def far_below():
    x = 1


    y = 2
    return (x +
            y)

class Klass:
    def method(self):
        return [x for x in range(3)]
'''


def codes(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from codes(c)


out = []
for co in codes(compile(SOURCE, "fixture.py", "exec")):
    units = len(co.co_code) // 2
    lines = [-1] * units
    for start, end, line in co.co_lines():
        for u in range(start // 2, min(end // 2, units)):
            lines[u] = -1 if line is None else line
    out.append({"name": co.co_name, "first_line": co.co_firstlineno,
                "table": co.co_linetable.hex(), "lines": lines})
json.dump({"minor": sys.version_info.minor, "codes": out}, sys.stdout)
