import sys

from llmviz.cli import main

sys.exit(main())
