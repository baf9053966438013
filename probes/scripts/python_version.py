"""Which Python this is: the first question neuronctl asks an interpreter given as --python.

Runs on any Python, 2.7 included (so that an old one can say what it is), under -S. argv:
CHANNEL_FD. Writes "MAJOR.MINOR" and a newline to the channel.
"""

import os
import sys

if __name__ == "__main__":
    answer = ".".join(str(part) for part in sys.version_info[:2]) + "\n"
    os.write(int(sys.argv[1]), answer.encode("ascii"))
