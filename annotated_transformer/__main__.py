from annotated_transformer.cli import main

raise SystemExit(main())
