"""TaskManagers as processes of this machine (DESIGN 4): every core for one job.

`pool` starts and watches the processes from the JobMaster's side; `worker` is what runs in each of them (the
same TaskManager object as in thread mode, behind a control connection); `protocol` is what crosses."""
