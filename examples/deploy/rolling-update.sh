#!/bin/sh
# Rolling update of bareweb instances run by systemd (bareweb.service, one per host)
# behind a balancer that checks /healthz (haproxy.cfg): one host at a time, the new site
# is built, the running instance drains (SIGTERM: /healthz 503 at once, in-flight and
# kept-alive requests finish, exit within --drain-timeout), the new one starts, and the
# script waits for its /healthz before going on. A site's content IS its image, so a
# content change is this replacement.
#
#   rolling-update.sh SITE_DIR web1 web2 web3
set -eu
site=$1; shift
for host in "$@"; do
    echo "== $host"
    rsync -a --delete "$site"/ "$host":/srv/www/site.new/
    ssh "$host" 'bareweb build /srv/www/site.new -o /srv/www/site.bws.new &&
                 mv /srv/www/site.bws.new /srv/www/site.bws &&
                 systemctl restart bareweb'      # restart = SIGTERM (drain), then start
    i=0
    until curl -fsS --max-time 1 -o /dev/null "http://$host/healthz"; do
        i=$((i + 1)); [ "$i" -lt 60 ] || { echo "$host: not healthy after 60 s" >&2; exit 1; }
        sleep 1
    done
    sleep 2   # the balancer's rise count before the next instance leaves
done
