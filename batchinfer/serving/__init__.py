"""The model server: SageMaker's inference container contract (spec C1-C10: what SageMaker expects
of an inference container) over gunicorn.

``handlers`` turns a request body into a response body (the user-module protocol and its
defaults), ``app`` is the WSGI application, ``server`` runs it under gunicorn, ``launcher``
starts a server in a subprocess for the local engine and the tests.
"""
