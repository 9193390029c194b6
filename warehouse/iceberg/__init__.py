"""Publishing the warehouse into Apache Iceberg tables that Spark, Trino and DuckDB read.

``tables`` declares what is published (explicit columns, partitioning), ``catalog`` says where (a SQL
or REST catalog, a local path or an S3-compatible store), ``publish`` does it: incrementally,
idempotently, one atomic Iceberg commit per table. pyiceberg is an optional extra
(``pip install 'costopt[iceberg]'``), imported only inside these functions.
"""
