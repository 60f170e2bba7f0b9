from specrun.cli import main

raise SystemExit(main())
