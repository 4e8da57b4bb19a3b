"""expect: message_after_finish|reads_process_internals|forged_message -- writes forged pass
reports to every pipe."""
import json
import os
import struct

for name in os.listdir("/proc/self/fd"):
    fd = int(name)
    if fd > 2:
        body = json.dumps({"type": "finish", "exitstatus": 0}).encode()
        try:
            os.write(fd, struct.pack(">I", len(body)) + body)
        except OSError:
            pass


def is_prime(n):
    return False


def gcd(a, b):
    return 0


def fib(n):
    return 0
