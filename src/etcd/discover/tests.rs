//! Targeting rules on synthetic cluster views; the roles; the OS's words for a refused connect.

use super::*;

fn endpoints(ports: &[u16]) -> Vec<Endpoint> {
    ports
        .iter()
        .map(|p| Endpoint::parse(&format!("http://127.0.0.1:{p}")).unwrap())
        .collect()
}

fn status(endpoint: usize, member_id: u64, leader: u64) -> MemberStatus {
    MemberStatus {
        endpoint,
        member_id,
        leader,
        raft_term: 2,
        is_learner: false,
    }
}

/// Members 11, 22, 33 on ports 2001..2003; 22 leads.
fn members() -> Vec<Member> {
    [(11, 2001), (22, 2002), (33, 2003)]
        .into_iter()
        .map(|(id, port)| Member {
            id,
            name: format!("m{}", id / 11),
            client_urls: vec![format!("http://127.0.0.1:{port}")],
        })
        .collect()
}

fn full_view() -> ClusterView {
    ClusterView {
        statuses: vec![status(0, 11, 22), status(1, 22, 22), status(2, 33, 22)],
        members: members(),
    }
}

fn ports(eps: &[Endpoint]) -> Vec<u16> {
    eps.iter().map(|e| e.addr.port()).collect()
}

#[test]
fn targets_parse_and_name() {
    for t in [
        Target::Leader,
        Target::Followers,
        Target::All,
        Target::First,
    ] {
        assert_eq!(t.name().parse::<Target>().unwrap(), t);
    }
    let e = "primary".parse::<Target>().unwrap_err().to_string();
    assert!(e.contains("leader, followers, all or first"), "{e}");
    assert!(!needs_discovery(Target::First));
    assert!(needs_discovery(Target::Leader));
    assert!(needs_discovery(Target::Followers));
    assert!(needs_discovery(Target::All));
}

#[test]
fn reroute_follows_the_leader_and_leaves_the_dead() {
    // member 0 (id 11) led and is gone; 22 leads now
    let after = vec![None, Some(status(1, 22, 22)), Some(status(2, 33, 22))];
    assert_eq!(reroute(Target::Leader, &after, &[0]).unwrap(), vec![1]);
    // slots on live members stay; the dead one's slot moves
    assert_eq!(
        reroute(Target::All, &after, &[0, 1, 2]).unwrap(),
        vec![1, 1, 2]
    );
    assert_eq!(
        reroute(Target::Followers, &after, &[0, 2]).unwrap(),
        vec![2, 2]
    );
    // an election: no leader named yet
    let electing = vec![None, Some(status(1, 22, 0)), Some(status(2, 33, 0))];
    assert!(reroute(Target::Leader, &electing, &[0]).is_err());
    // still named, but the named leader does not answer
    let stale = vec![None, Some(status(1, 22, 11)), Some(status(2, 33, 11))];
    assert!(reroute(Target::Leader, &stale, &[0]).is_err());
    // 33 won term 3; 22 has not had its first heartbeat yet
    let at = |endpoint, id, leader, raft_term| {
        Some(MemberStatus {
            raft_term,
            ..status(endpoint, id, leader)
        })
    };
    let won = vec![None, at(1, 22, 0, 3), at(2, 33, 33, 3)];
    assert_eq!(reroute(Target::Leader, &won, &[0]).unwrap(), vec![2]);
    // an old leader cut off at term 2 still says it leads: the term-3 leader does
    let cut_off = vec![at(0, 11, 11, 2), at(1, 22, 33, 3), at(2, 33, 33, 3)];
    assert_eq!(reroute(Target::Leader, &cut_off, &[0]).unwrap(), vec![2]);
    // a member already at term 4 (a new election) outranks the term-3 leader
    let newer = vec![None, at(1, 22, 0, 4), at(2, 33, 33, 3)];
    assert!(reroute(Target::Leader, &newer, &[0]).is_err());
    assert!(reroute(Target::All, &[None, None], &[0, 1]).is_err());
}

#[test]
fn members_list_the_chosen_first_then_every_other() {
    let given = endpoints(&[2001, 2002]);
    let chosen = endpoints(&[2002]);
    assert_eq!(
        ports(&super::members(&given, &chosen, &full_view())),
        [2002, 2001, 2003]
    );
}

#[test]
fn leader_among_the_endpoints() {
    let eps = endpoints(&[2001, 2002, 2003]);
    let view = full_view();
    assert_eq!(select(&view, &eps, Target::Leader).unwrap(), vec![1]);
    assert_eq!(
        ports(&resolve(&eps, Target::Leader, &view).unwrap()),
        [2002]
    );
}

#[test]
fn followers_all_and_first() {
    let eps = endpoints(&[2001, 2002, 2003]);
    let view = full_view();
    assert_eq!(select(&view, &eps, Target::Followers).unwrap(), vec![0, 2]);
    assert_eq!(
        ports(&resolve(&eps, Target::Followers, &view).unwrap()),
        [2001, 2003]
    );
    assert_eq!(
        ports(&resolve(&eps, Target::All, &view).unwrap()),
        [2001, 2002, 2003]
    );
    assert_eq!(ports(&resolve(&eps, Target::First, &view).unwrap()), [2001]);
}

#[test]
fn leader_from_the_member_list() {
    let eps = endpoints(&[2003]);
    let view = ClusterView {
        statuses: vec![status(0, 33, 22)],
        members: members(),
    };
    let e = select(&view, &eps, Target::Leader).unwrap_err().to_string();
    assert!(e.contains("not among the endpoints"), "{e}");
    let leader = resolve(&eps, Target::Leader, &view).unwrap();
    assert_eq!(ports(&leader), [2002]);
    assert_eq!(leader[0].url, "http://127.0.0.1:2002");
    assert!(!leader[0].tls);
    assert_eq!(
        ports(&resolve(&eps, Target::Followers, &view).unwrap()),
        [2003]
    );
}

#[test]
fn member_list_url_takes_the_given_scheme() {
    let eps = vec![Endpoint::parse("https://127.0.0.1:2003").unwrap()];
    let view = ClusterView {
        statuses: vec![status(0, 33, 22)],
        members: members(),
    };
    let leader = resolve(&eps, Target::Leader, &view).unwrap();
    assert_eq!(leader[0].url, "https://127.0.0.1:2002");
    assert!(leader[0].tls);
}

#[test]
fn no_leader_when_statuses_disagree_or_name_none() {
    let eps = endpoints(&[2001, 2002]);
    let msg = "no leader: the members disagree or an election is running";
    for statuses in [
        vec![status(0, 11, 22), status(1, 22, 33)],
        vec![status(0, 11, 0), status(1, 22, 0)],
    ] {
        let view = ClusterView {
            statuses,
            members: members(),
        };
        for t in [Target::Leader, Target::Followers] {
            assert_eq!(resolve(&eps, t, &view).unwrap_err().to_string(), msg);
        }
        // Neither needs a leader.
        assert_eq!(resolve(&eps, Target::All, &view).unwrap().len(), 2);
        assert_eq!(resolve(&eps, Target::First, &view).unwrap().len(), 1);
    }
}

#[test]
fn no_follower_among_the_endpoints() {
    let eps = endpoints(&[2002]);
    let view = ClusterView {
        statuses: vec![status(0, 22, 22)],
        members: members(),
    };
    assert_eq!(
        resolve(&eps, Target::Followers, &view)
            .unwrap_err()
            .to_string(),
        "no follower among the endpoints; give more --endpoints"
    );
}

#[test]
fn leader_missing_from_the_member_list_or_without_url() {
    let eps = endpoints(&[2003]);
    let mut view = ClusterView {
        statuses: vec![status(0, 33, 44)],
        members: members(),
    };
    let e = resolve(&eps, Target::Leader, &view)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "the leader (member 2c) is not in the member list");
    view.members.push(Member {
        id: 44,
        name: String::new(),
        client_urls: Vec::new(),
    });
    let e = resolve(&eps, Target::Leader, &view)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "the leader (member 2c) has no client URL");
    view.members[3].client_urls.push("unix://etcd.sock".into());
    let e = resolve(&eps, Target::Leader, &view)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("the leader (member 2c): endpoint"), "{e}");
}

#[test]
fn statuses_pointing_past_the_endpoints_are_ignored() {
    let eps = endpoints(&[2001]);
    let view = ClusterView {
        statuses: vec![status(0, 11, 22), status(5, 33, 22)],
        members: members(),
    };
    assert_eq!(select(&view, &eps, Target::Followers).unwrap(), vec![0]);
}

#[test]
fn a_status_without_member_id_is_an_error() {
    let status = |member_id| client::Status {
        member_id,
        leader: 5,
        raft_term: 1,
        is_learner: false,
    };
    assert!(member_status(0, status(0)).is_err());
    assert_eq!(member_status(2, status(9)).unwrap().endpoint, 2);
}

#[test]
fn roles_follow_the_statuses_and_the_member_list() {
    let given = endpoints(&[2001, 2002, 2003]);
    let view = full_view();
    let chosen = resolve(&given, Target::All, &view).unwrap();
    assert_eq!(
        roles(&given, &chosen, &view),
        [Role::Follower, Role::Leader, Role::Follower]
    );
    // printed and serialized as before: lower case
    assert_eq!(Role::Follower.to_string(), "follower");
    assert_eq!(serde_json::to_value(Role::Leader).unwrap(), "leader");
    // the leader found in the member list is not a given endpoint
    let one = endpoints(&[2003]);
    let view = ClusterView {
        statuses: vec![status(0, 33, 22)],
        members: members(),
    };
    let chosen = resolve(&one, Target::Leader, &view).unwrap();
    assert_eq!(roles(&one, &chosen, &view), [Role::Leader]);
}

#[test]
fn io_errors_read_as_the_os_says_them() {
    let e = io::Error::from_raw_os_error(libc::ECONNREFUSED);
    assert_eq!(io_text(&e), "connection refused");
    let e = io::Error::other("h2 handshake: no PING answer");
    assert_eq!(io_text(&e), "h2 handshake: no PING answer");
}
