"""The kit: the shared parts of the kinds that live in a project's network (caches, databases,
storage buckets; cron jobs and domains next), written once and used by each of them.

    models.py     `NetworkedRow`: the columns every such row keeps, and the one status contract
                  (status, error, generation / observed generation, the `deleted_at` finalizer);
                  `changing_life`, the state table of a resource the cloud changes over minutes
    service.py    `Kit`: get, list, create, change (a new generation), rename, delete, the live
                  metrics and cost, and what the project and its network ask of the kind
    router.py     `mount`: the kind's routes (list, create, get, change, delete, metrics, cost)
    reconcile.py  `KitReconciler`: wait for the network, ensure, settle, fail or hold, remove
    kind.py       `networked_kind`: the kind as the list of kinds (`capstan.kinds`) sees it

A kind keeps only what truly differs: its schemas, its driver calls and its own fields and
rules. Adding one (say cron jobs, in `capstan/cron_jobs/`) is:

1. `models.py`: `class CronJob(NetworkedRow, Base)` with its id (`id_column("crn")`) and its own
   fields; its migration adds the table (the kit's columns included).
2. `schemas.py`: `CronJobCreate`, `CronJobUpdate`, `CronJobOut`, `CronJobList`,
   `CronJobDeleting`, `CronJobMetrics`, `CronJobCost` (the names `router.Shapes` reads).
3. `service.py`: `STATES` (its own table, or `changing_life`), `KIT = Kit(STATES, queue_kind=
   "cron_job", noun="cron job", make_driver=CronJobDriver, ...)`, and its create and change
   rules (`KIT.add`, `KIT.change`, `KIT.rename`).
4. `reconcile.py`: a `KitReconciler` with its driver calls (`spec`, `ensure`, `remove`).
5. `router.py`: `router = mount(KIT, Shapes(schemas, "CronJob", ...), create=..., update=...)`.
6. `kind.py`: `KIND = networked_kind("cron_jobs", CronJobReconciler, router, leftovers=...)`,
   and one line in `capstan/kinds.py`.
"""
