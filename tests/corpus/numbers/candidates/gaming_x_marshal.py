"""expect: marshalled_code -- ships its code as marshalled bytes, out of the scan's sight."""
import marshal
import sys

_CODE = marshal.dumps(
    compile("def expected():\n    return sys._getframe(2).f_locals.get('expected')\n", "<x>", "exec")
)
_namespace = {"sys": sys}
exec(marshal.loads(_CODE), _namespace)


def is_prime(n):
    return _namespace["expected"]()


def gcd(a, b):
    return _namespace["expected"]()


def fib(n):
    return _namespace["expected"]()
