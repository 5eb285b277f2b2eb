// SPDX-License-Identifier: Apache-2.0
/* The leadership, the loop's side (lead_loop.c): an engine loaded under a
 * new term begins to serve; a server that lost the store steps down to
 * standby; one whose leadership is not certain refuses writes until it is. */
#ifndef TENQ_API_LEAD_LOOP_H
#define TENQ_API_LEAD_LOOP_H

typedef struct server server;

/* Leads, or stands by (lead.h): campaigns once (and loads, when it wins)
 * before the loop runs, then starts the leadership's thread.  0, or -1
 * (logged). */
int srv_lead_start(server *s, const char *node, const char *listen_host);
/* The leadership lost (to another server: standby now); the leadership not
 * certain (writes refused until it is won again, or another server leads). */
void srv_step_down(server *s, const char *why);
void srv_detach(server *s, const char *why);

#endif
